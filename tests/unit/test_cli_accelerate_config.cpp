// Unit tests of host/cli/accelerate_config (accelerate's config files mapped key by key onto lrhost):
// the LeRobot guide's fsdp.yaml and TRL's templates (tests/fixtures/accelerate/), flags typed beside
// the file, the default-config lookup order, and every error path.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "host/cli/accelerate_config.hpp"
#include "host/cli/lerobot_train.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::cli::AccelerateConfigContext;
using lrhost::cli::AccelerateConfigMapping;
using lrhost::cli::map_accelerate_config;

namespace {
AccelerateConfigContext act_context() {
  return {.policy = lrhost::policy::find_policy_spec("act"), .typed = {}};
}

AccelerateConfigMapping accel_fixture(const std::string& name, const AccelerateConfigContext& context = act_context()) {
  return map_accelerate_config(lrhost::test::fixture_path("accelerate", name), context);
}

bool listed(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The printed line of `key` ("key: value -> effect"); empty when the key has none.
std::string key_line(const AccelerateConfigMapping& mapping, const std::string& key) {
  for (const auto& line : mapping.lines)
    if (line.starts_with(key + ": ")) return line;
  return {};
}

// Every top-level and nested key of a fixture has its own line.
void check_every_key_listed(const std::string& name, const AccelerateConfigMapping& mapping) {
  std::ifstream in(lrhost::test::fixture_path("accelerate", name));
  std::string text, parent;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#' || text.find(':') == std::string::npos) continue;
    const bool nested = text.starts_with("  ");
    std::string key = text.substr(nested ? 2 : 0, text.find(':') - (nested ? 2 : 0));
    if (!nested) parent = key;
    if (!nested && (key == "fsdp_config" || key == "deepspeed_config")) continue;
    const std::string full = nested ? parent + "." + key : key;
    CHECK_MESSAGE(!key_line(mapping, full).empty(), name << ": no line for " << full);
  }
}

fs::path write_config(const lrhost::test::TempDir& dir, const std::string& name, const std::string& content) {
  fs::path file = dir / name;
  std::ofstream(file) << content;
  return file;
}

std::string config_error(const fs::path& file, const AccelerateConfigContext& context = act_context()) {
  try {
    map_accelerate_config(file, context);
  } catch (const lrhost::util::Error& error) {
    return lrhost::util::describe(error);
  }
  return "no error";
}

const std::string kFsdpConfigHead = "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n";
}  // namespace

TEST_CASE("the guide's fsdp.yaml: FSDP ZeRO-3 over every rank with ACT's layers as units, bf16") {
  auto mapping = accel_fixture("guide_fsdp.yaml");
  CHECK(mapping.num_processes == 4);
  CHECK(!mapping.device);
  CHECK(listed(mapping.overrides, "parallelism.dp_shard=-1"));
  CHECK(listed(mapping.overrides, "parallelism.dp_replicate=1"));
  CHECK(listed(mapping.overrides, "accelerator.fsdp.reshard_after_forward=true"));
  CHECK(listed(mapping.overrides, "accelerator.fsdp.wrap_modules=ACTEncoderLayer,ACTDecoderLayer"));
  CHECK(listed(mapping.overrides, "accelerator.mixed_precision=bf16"));
  CHECK(key_line(mapping, "fsdp_config.fsdp_state_dict_type").find("full pretrained_model") != std::string::npos);
  CHECK(key_line(mapping, "fsdp_config.fsdp_use_orig_params").find("no effect") != std::string::npos);
  check_every_key_listed("guide_fsdp.yaml", mapping);
}

TEST_CASE("TRL's templates map onto DDP, ZeRO-2 or ZeRO-3, every key listed") {
  struct Case {
    std::string file;
    std::optional<std::string> reshard;  // nullopt: DDP (no parallelism override)
    std::string precision;
  };
  for (const auto& [file, reshard, precision] : std::vector<Case>{{"multi_gpu.yaml", std::nullopt, "bf16"},
                                                                  {"deepspeed_zero1.yaml", "false", "bf16"},
                                                                  {"deepspeed_zero2.yaml", "false", "bf16"},
                                                                  {"deepspeed_zero3.yaml", "true", "bf16"},
                                                                  {"fsdp1.yaml", "true", "bf16"},
                                                                  {"fsdp2.yaml", "true", "bf16"}}) {
    CAPTURE(file);
    auto mapping = accel_fixture(file);
    CHECK(mapping.num_processes == 8);
    CHECK(listed(mapping.overrides, "accelerator.mixed_precision=" + precision));
    if (reshard) {
      CHECK(listed(mapping.overrides, "parallelism.dp_shard=-1"));
      CHECK(listed(mapping.overrides, "accelerator.fsdp.reshard_after_forward=" + *reshard));
    } else {
      CHECK(std::none_of(mapping.overrides.begin(), mapping.overrides.end(),
                         [](const std::string& o) { return o.starts_with("parallelism."); }));
    }
    check_every_key_listed(file, mapping);
  }
  CHECK(key_line(accel_fixture("deepspeed_zero1.yaml"), "deepspeed_config.zero_stage").find("no ZeRO-1") !=
        std::string::npos);
  CHECK(key_line(accel_fixture("multi_gpu.yaml"), "gpu_ids").find("every visible GPU") != std::string::npos);
}

TEST_CASE("flags typed beside the file win, and the line says so") {
  auto context = act_context();
  context.typed = {{"nproc", "--num_processes=2"},
                   {"accelerator.mixed_precision", "accelerator.mixed_precision=no"},
                   {"accelerator.fsdp.reshard_after_forward", "accelerator.fsdp.reshard_after_forward=false"}};
  auto mapping = accel_fixture("guide_fsdp.yaml", context);
  CHECK(!mapping.num_processes);
  CHECK(key_line(mapping, "num_processes").find("--num_processes=2 typed beside the file wins") != std::string::npos);
  CHECK(!listed(mapping.overrides, "accelerator.mixed_precision=bf16"));
  CHECK(!listed(mapping.overrides, "accelerator.fsdp.reshard_after_forward=true"));
  CHECK(listed(mapping.overrides, "parallelism.dp_shard=-1"));
  CHECK(key_line(mapping, "fsdp_config.fsdp_sharding_strategy").find("overridden") != std::string::npos);
}

TEST_CASE(
    "sharding strategies, fsdp2's reshard_after_forward, gpu_ids, use_cpu, deepspeed's clipping and accumulation") {
  lrhost::test::TempDir dir("accelerate_values");
  auto map = [&](const std::string& content) {
    return map_accelerate_config(write_config(dir, "c.yaml", content), act_context());
  };
  CHECK(listed(map(kFsdpConfigHead + "  fsdp_sharding_strategy: 2\n").overrides,
               "accelerator.fsdp.reshard_after_forward=false"));
  CHECK(listed(map(kFsdpConfigHead + "  fsdp_sharding_strategy: SHARD_GRAD_OP\n").overrides,
               "accelerator.fsdp.reshard_after_forward=false"));
  CHECK(listed(map(kFsdpConfigHead + "  fsdp_sharding_strategy: _HYBRID_SHARD_ZERO2\n").overrides,
               "accelerator.fsdp.reshard_after_forward=false"));
  auto hybrid = map(kFsdpConfigHead + "  fsdp_sharding_strategy: HYBRID_SHARD\n");
  CHECK(listed(hybrid.overrides, "accelerator.fsdp.reshard_after_forward=true"));
  CHECK(key_line(hybrid, "fsdp_config.fsdp_sharding_strategy").find("machine as shard group") != std::string::npos);
  auto no_shard = map(kFsdpConfigHead + "  fsdp_sharding_strategy: NO_SHARD\n");
  CHECK(no_shard.overrides.empty());
  CHECK(key_line(no_shard, "fsdp_config.fsdp_sharding_strategy").find("DDP") != std::string::npos);
  CHECK(listed(map(kFsdpConfigHead + "  fsdp_version: 2\n  fsdp_reshard_after_forward: false\n").overrides,
               "accelerator.fsdp.reshard_after_forward=false"));
  // No strategy: accelerate's default FULL_SHARD.
  CHECK(listed(map(kFsdpConfigHead + "  fsdp_version: 1\n").overrides, "accelerator.fsdp.reshard_after_forward=true"));

  auto gpus = map("distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 2,3\n");
  CHECK(gpus.cuda_visible_devices == "2,3");
  CHECK(key_line(gpus, "gpu_ids").find("CUDA_VISIBLE_DEVICES=2,3") != std::string::npos);
  CHECK(map("distributed_type: NO\nuse_cpu: true\n").device == "cpu");
  CHECK(map("distributed_type: MULTI_CPU\nnum_processes: 2\n").device == "cpu");
  CHECK(!map("distributed_type: NO\nnum_processes: 4\n").num_processes);  // NO: one process

  auto ds =
      map("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 2\n"
          "  gradient_accumulation_steps: 4\n  gradient_clipping: 1.0\n");
  CHECK(listed(ds.overrides, "accelerator.gradient_accumulation_steps=4"));
  CHECK(listed(ds.overrides, "optimizer.grad_clip_norm=1.0"));
  CHECK(listed(ds.overrides, "accelerator.fsdp.reshard_after_forward=false"));
  CHECK(map("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 0\n").overrides.empty());

  // JSON, as `accelerate config default` writes it (into default_config.yaml too).
  auto json_file = write_config(dir, "c.json",
                                R"({"compute_environment": "LOCAL_MACHINE", "distributed_type": "MULTI_GPU",
                             "mixed_precision": "fp16", "num_processes": 3, "use_cpu": false, "debug": false})");
  auto from_json = map_accelerate_config(json_file, act_context());
  CHECK(from_json.num_processes == 3);
  CHECK(listed(from_json.overrides, "accelerator.mixed_precision=fp16"));
}

TEST_CASE("fsdp_activation_checkpointing becomes the policy's gradient_checkpointing where it has one") {
  lrhost::test::TempDir dir("accelerate_checkpointing");
  auto file = write_config(dir, "c.yaml", kFsdpConfigHead + "  fsdp_activation_checkpointing: true\n");
  auto pi05 = map_accelerate_config(file, {.policy = lrhost::policy::find_policy_spec("pi05"), .typed = {}});
  CHECK(listed(pi05.overrides, "policy.gradient_checkpointing=true"));
  CHECK(config_error(file).find("act policy has no gradient checkpointing") != std::string::npos);
}

TEST_CASE("fsdp_transformer_layer_cls_to_wrap: LeRobot's classes as the policy's units, an unknown one listed") {
  lrhost::test::TempDir dir("accelerate_classes");
  auto smolvla = map_accelerate_config(
      write_config(
          dir, "s.yaml",
          kFsdpConfigHead + "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer,SmolVLMVisionTransformer\n"),
      {.policy = lrhost::policy::find_policy_spec("smolvla"), .typed = {}});
  CHECK(listed(smolvla.overrides, "accelerator.fsdp.wrap_modules=LlamaDecoderLayer,SiglipVisionTransformer"));
  auto message = config_error(
      write_config(dir, "u.yaml", kFsdpConfigHead + "  fsdp_transformer_layer_cls_to_wrap: <YourTransformerBlock>\n"));
  CHECK(message.find("u.yaml: fsdp_config.fsdp_transformer_layer_cls_to_wrap") != std::string::npos);
  CHECK(message.find("'<YourTransformerBlock>' is not a class of LeRobot's act policy") != std::string::npos);
  CHECK(message.find("'ACTEncoderLayer', 'ACTDecoderLayer'") != std::string::npos);
}

TEST_CASE("bad accelerate configs: each error names the file and key") {
  lrhost::test::TempDir dir("accelerate_errors");
  struct Case {
    std::string content, expected;
  };
  for (const auto& [content, expected] : std::vector<Case>{
           {"distributed_type: MULTI_GPU\nnum_processes: 2\nnum_procs: 2\n", "c.yaml: num_procs: unknown key"},
           {kFsdpConfigHead + "  fsdp_foo: 1\n", "c.yaml: fsdp_config.fsdp_foo: unknown key"},
           {"distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stag: 2\n",
            "deepspeed_config.zero_stag: unknown key"},
           {kFsdpConfigHead + "  fsdp_offload_params: true\n",
            "fsdp_config.fsdp_offload_params: true cannot be honoured"},
           {"distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  offload_optimizer_device: cpu\n",
            "deepspeed_config.offload_optimizer_device: cpu cannot be honoured"},
           {"distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  offload_param_device: nvme\n",
            "offload_param_device: nvme cannot be honoured"},
           {"distributed_type: MULTI_GPU\nnum_processes: 16\nnum_machines: 2\nmachine_rank: 1\nmain_process_ip: "
            "10.0.0.1\n"
            "main_process_port: 29500\n",
            "--nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29500"},
           {"distributed_type: XLA\n", "distributed_type: XLA cannot be honoured"},
           {"num_processes: 2\n", "distributed_type: missing"},
           {"distributed_type: MULTI_GPU\n", "num_processes: missing"},
           {"distributed_type: MULTI_GPU\nnum_processes: -1\n", "num_processes: -1 (unset)"},
           {"distributed_type: MULTI_GPU\nnum_processes: two\n", "num_processes: expected a whole number"},
           {"distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: fp8\n",
            "mixed_precision: fp8 cannot be honoured"},
           {"distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: fp32\n",
            "mixed_precision: expected no, bf16"},
           {"distributed_type: MULTI_GPU\nnum_processes: 2\nuse_cpu: maybe\n", "use_cpu: expected true or false"},
           {"distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: first\n", "gpu_ids: expected all or GPU indices"},
           {"distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 1,1\n", "gpu_ids: '1,1' lists GPU 1 twice"},
           {kFsdpConfigHead + "  fsdp_sharding_strategy: HALF_SHARD\n", "fsdp_sharding_strategy: expected FULL_SHARD"},
           {kFsdpConfigHead + "  fsdp_version: 2\n  fsdp_reshard_after_forward: FULL_SHARD\n",
            "fsdp_version 2 takes true or false"},
           {kFsdpConfigHead + "  fsdp_version: 3\n", "fsdp_version: expected 1 or 2"},
           {kFsdpConfigHead + "  fsdp_auto_wrap_policy: NO_WRAP\n",
            "fsdp_auto_wrap_policy: NO_WRAP cannot be honoured"},
           {kFsdpConfigHead + "  fsdp_state_dict_type: PICKLE\n", "fsdp_state_dict_type: expected FULL_STATE_DICT"},
           {"distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 4\n",
            "zero_stage: expected 0, 1, 2 or 3"},
           {"distributed_type: MULTI_GPU\nnum_processes: 2\nparallelism_config:\n  parallelism_config_tp_size: 2\n",
            "parallelism_config: "},
           {"compute_environment: AMAZON_SAGEMAKER\ndistributed_type: MULTI_GPU\n", "not on Amazon SageMaker"},
           {"- distributed_type: FSDP\n", "expected a mapping of accelerate's keys"},
           {"just text\n", "expected a mapping of accelerate's keys"},
           {"", "expected a mapping of accelerate's keys"},
           {"distributed_type: [FSDP\n", "not valid YAML"},
       }) {
    CAPTURE(content);
    const auto message = config_error(write_config(dir, "c.yaml", content));
    CHECK_MESSAGE(message.find(expected) != std::string::npos, message);
    CHECK_MESSAGE(message.find("c.yaml") != std::string::npos, message);
  }
  CHECK(config_error(dir / "missing.yaml").find("missing.yaml: no such file") != std::string::npos);
  CHECK(config_error(write_config(dir, "c.json", "{\"distributed_type\": ")).find("not valid JSON") !=
        std::string::npos);
}

TEST_CASE("the default config: $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface") {
  lrhost::test::TempDir dir("accelerate_default");
  for (const auto* folder : {"hf", "xdg/huggingface", "home/.cache/huggingface"}) {
    fs::create_directories(dir / folder / "accelerate");
    std::ofstream(dir / folder / "accelerate" / "default_config.yaml") << "distributed_type: NO\n";
  }
  std::map<std::string, std::string> vars{{"HF_HOME", (dir / "hf").string()},
                                          {"XDG_CACHE_HOME", (dir / "xdg").string()},
                                          {"HOME", (dir / "home").string()}};
  auto env = [&](const std::string& name) -> std::optional<std::string> {
    auto found = vars.find(name);
    return found == vars.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
  CHECK(lrhost::cli::default_accelerate_config(env) == dir / "hf" / "accelerate" / "default_config.yaml");
  vars.erase("HF_HOME");
  CHECK(lrhost::cli::default_accelerate_config(env) ==
        dir / "xdg" / "huggingface" / "accelerate" / "default_config.yaml");
  vars.erase("XDG_CACHE_HOME");
  CHECK(lrhost::cli::default_accelerate_config(env) ==
        dir / "home" / ".cache" / "huggingface" / "accelerate" / "default_config.yaml");
  // HF_HOME set without a saved config: accelerate looks nowhere else (no fallback to ~/.cache).
  vars["HF_HOME"] = (dir / "empty").string();
  CHECK(!lrhost::cli::default_accelerate_config(env));
}

TEST_CASE("lerobot-train: --config_file maps into the plan; the saved default applies without it") {
  const auto guide = lrhost::test::fixture_path("accelerate", "guide_fsdp.yaml").string();
  auto plan = lrhost::cli::plan_lerobot_train(
      {"--config_file", guide, "--num_processes=2", "--policy.type=act", "--device", "cpu"});
  CHECK(plan.nproc == 2);
  CHECK(plan.device == "cpu");
  CHECK(listed(plan.overrides, "parallelism.dp_shard=-1"));
  CHECK(listed(plan.overrides, "accelerator.fsdp.wrap_modules=ACTEncoderLayer,ACTDecoderLayer"));
  CHECK(plan.accelerate_config.front().find("guide_fsdp.yaml (--config_file)") != std::string::npos);
  CHECK(plan.equivalent_command().find("parallelism.dp_shard=-1") != std::string::npos);

  lrhost::test::TempDir dir("accelerate_plan");
  auto saved =
      write_config(dir, "default_config.yaml", "distributed_type: MULTI_GPU\nnum_processes: 3\ngpu_ids: 0,1,2\n");
  auto from_default = lrhost::cli::plan_lerobot_train({"--policy.type=act"}, saved);
  CHECK(from_default.nproc == 3);
  CHECK(from_default.accelerate_config.front().find("accelerate's saved default config") != std::string::npos);
  CHECK(from_default.equivalent_command().starts_with("CUDA_VISIBLE_DEVICES=0,1,2 lrhost "));
  // --config_file wins over the saved default; without either, nothing changes.
  CHECK(lrhost::cli::plan_lerobot_train({"--policy.type=act", "--config_file=" + guide}, saved).nproc == 4);
  auto plain = lrhost::cli::plan_lerobot_train({"--policy.type=act"});
  CHECK(plain.accelerate_config.empty());
  CHECK(!plain.nproc);
}
