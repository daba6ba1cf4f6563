// Unit tests of host/cli/lerobot_train (lerobot-train's command line mapped onto a shipped recipe)
// and host/policy/pretrained_overrides (command-line policy fields on top of a pretrained config).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "host/cli/lerobot_train.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/policy/pretrained_overrides.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::cli::plan_lerobot_train;
using nlohmann::json;

namespace {
// A pretrained folder as far as the mapping reads it: config.json with LeRobot's defaults of `type`.
fs::path pretrained_folder(const lrhost::test::TempDir& dir, const std::string& type) {
  fs::path folder = dir / ("pretrained_" + type);
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << lrhost::policy::default_policy_config_with_nulls(type).dump(4);
  return folder;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string error_of(const std::vector<std::string>& arguments) {
  try {
    plan_lerobot_train(arguments);
  } catch (const lrhost::util::Error& error) {
    return lrhost::util::describe(error);
  }
  return "no error";
}
}  // namespace

TEST_CASE("lerobot-train: the multi-GPU guide's command line maps onto the SmolVLA recipe") {
  lrhost::test::TempDir dir("lerobot_train_guide");
  const auto smolvla = pretrained_folder(dir, "smolvla").string();
  auto plan = plan_lerobot_train({"--multi_gpu", "--num_processes=4", "--mixed_precision=bf16",
                                  "--policy.path=" + smolvla, "--dataset.repo_id=user/so100_task", "--batch_size=12",
                                  "--steps=20000", "--output_dir=outputs/train/smolvla",
                                  R"(--rename_map={"observation.images.top": "observation.images.camera1"})"});
  CHECK(fs::path(plan.recipe).filename() == "smolvla.lua");
  CHECK(plan.nproc == 4);
  CHECK(plan.run_dir == "outputs/train/smolvla");
  for (const std::string& expected :
       {"policy.pretrained_path=" + smolvla, std::string("resume=false"),
        std::string("accelerator.mixed_precision=bf16"), std::string("dataset.repo_id=user/so100_task"),
        std::string("batch_size=12"), std::string("steps=20000"), std::string("output_dir=outputs/train/smolvla"),
        std::string(R"(rename_map={"observation.images.top": "observation.images.camera1"})")})
    CHECK_MESSAGE(has(plan.overrides, expected), expected);
  CHECK(!plan.all_gpus);  // --multi_gpu with a count: the count
  CHECK(plan_lerobot_train({"--policy.type=act", "--job_name=j", "--output_dir=o"}).notes ==
        std::vector<std::string>{"--job_name=j: names only the default output folder (and a wandb run) in LeRobot; "
                                 "--output_dir gives the folder here"});
  CHECK(plan_lerobot_train({"--multi_gpu", "--policy.type=act"}).all_gpus);
  // The printed line runs as is in a shell: the JSON is quoted.
  auto line = plan.equivalent_command();
  CHECK(line.find("smolvla.lua --nproc 4 --run-dir outputs/train/smolvla") != std::string::npos);
  CHECK(line.find(R"('rename_map={"observation.images.top": "observation.images.camera1"}')") != std::string::npos);
}

TEST_CASE("lerobot-train: from scratch, values after a space, LeRobot's output folder, key=value passed on") {
  auto plan = plan_lerobot_train({"--policy.type", "act", "--batch_size", "4", "--policy.chunk_size=10",
                                  "--job_name=act_push", "--save_freq=-1", "--policy.device=cpu", "eval_batches=2"});
  CHECK(fs::path(plan.recipe).filename() == "act_ddp.lua");
  CHECK(plan.device == "cpu");
  CHECK(has(plan.overrides, "batch_size=4"));
  CHECK(has(plan.overrides, "policy.chunk_size=10"));
  CHECK(has(plan.overrides, "save_freq=0"));  // <= 0: only the final checkpoint, as in LeRobot
  CHECK(has(plan.overrides, "eval_batches=2"));
  auto output = std::find_if(plan.overrides.begin(), plan.overrides.end(),
                             [](const std::string& o) { return o.starts_with("output_dir=outputs/train/"); });
  REQUIRE(output != plan.overrides.end());
  CHECK(output->ends_with("_act_push"));
  CHECK(!plan.nproc);
  CHECK(plan_lerobot_train({"--policy.type=diffusion", "--dry-run"}).dry_run);
  // LeRobot's values with no lrhost counterpart: 0 loader processes, a null field, an env left off.
  auto lerobot_values = plan_lerobot_train({"--policy.type=act", "--num_workers=0", "--env_eval_freq=0",
                                            "--policy.pretrained_backbone_weights=null",
                                            "--policy.temporal_ensemble_coeff=null", "--policy.push_to_hub=false"});
  CHECK(has(lerobot_values.overrides, "num_workers=1"));
  CHECK(has(lerobot_values.overrides, "policy.push_to_hub=false"));  // recorded in config.json as LeRobot does
  // null asks for a random backbone where lerobot-train's default is ImageNet's: it is passed on,
  // and LeRobot's value is not added.
  CHECK(has(lerobot_values.overrides, "policy.pretrained_backbone_weights=null"));
  CHECK(std::count_if(lerobot_values.overrides.begin(), lerobot_values.overrides.end(),
                      [](const std::string& o) { return o.starts_with("policy.pretrained_backbone_weights"); }) == 1);
  // A null field that lerobot-train leaves null has nothing to set.
  CHECK(std::none_of(lerobot_values.overrides.begin(), lerobot_values.overrides.end(),
                     [](const std::string& o) { return o.starts_with("policy.temporal_ensemble_coeff"); }));
  CHECK(has(lerobot_values.notes,
            "--num_workers=0: lrhost's loader workers are threads of each rank; 0 (LeRobot: "
            "the main process) becomes 1"));
  // What the command line leaves out is lerobot-train's default, not the shipped recipe's.
  CHECK(has(plan.overrides, "steps=100000"));
  CHECK(has(plan.overrides, "log_freq=200"));
  CHECK(has(plan.overrides, "policy.n_action_steps=100"));
  // LeRobot's ImageNet backbone, which lrhost's config leaves null (read from the torch hub cache).
  CHECK(has(plan.overrides, "policy.pretrained_backbone_weights=ResNet18_Weights.IMAGENET1K_V1"));
  CHECK(!has(plan.overrides, "policy.chunk_size=100"));  // typed: 10
  CHECK(!has(plan.overrides, "save_freq=20000"));        // typed: -1
  auto smolvla = plan_lerobot_train({"--policy.type=smolvla"});
  CHECK(has(smolvla.overrides, "policy.vlm_model_name=HuggingFaceTB/SmolVLM2-500M-Video-Instruct"));
  CHECK(has(smolvla.overrides, "policy.resize_imgs_with_padding=[512,512]"));
}

TEST_CASE("lerobot-train: what lrhost cannot honour is an error naming the flag and why") {
  CHECK(error_of({"--policy.type=act", "--policy.push_to_hub=true"})
            .find("--policy.push_to_hub=true cannot be "
                  "honoured: true is refused: lrhost never "
                  "uploads") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--policy.repo_id=me/act", "--policy.push_to_hub=false"}) == "no error");
  CHECK(error_of({"--policy.type=act", "--batch_sise=4"}).find("unknown flag --batch_sise") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--batch_sise=4"}).find("did you mean '--batch_size'") != std::string::npos);
  CHECK(error_of({"--policy.type=mlp"}).find("policy type 'mlp' has no shipped lrhost recipe") != std::string::npos);
  CHECK(error_of({"--batch_size=4"}).find("give the policy: --policy.type=") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--peft.lora_dropout=0.1"}).find("policy.peft.lora_dropout=0.1") !=
        std::string::npos);
  CHECK(error_of({"--policy.type=act", "--peft.rank=8"}).find("unknown flag --peft.rank") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--peft.target_modules=[q_proj,]"}).find("an empty module name") !=
        std::string::npos);
  CHECK(error_of({"--policy.type=act", "--env.type=pusht"}).find("lrhost eval") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--mixed_precision=fp8"}).find("no (fp32), bf16 or fp16") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--num_processes=0"}).find("whole number >= 1") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--resume=maybe"}).find("expects true or false") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--steps"}).find("--steps needs a value") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "stray"}).find("unexpected argument 'stray'") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--num_processes=2", "--gpus=2"}).find("not both") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--config_path=x.json"}).find("--config_path=x.json without --resume=true") !=
        std::string::npos);
  CHECK(error_of({"--policy.type=act", "--config_path=x.json"}).find("--policy.path=DIR") != std::string::npos);
  lrhost::test::TempDir dir("lerobot_train_types");
  CHECK(error_of({"--policy.type=act", "--policy.path=" + pretrained_folder(dir, "smolvla").string()})
            .find("is a 'smolvla' policy") != std::string::npos);
}

TEST_CASE("lerobot-train: --peft.* map one to one onto policy.peft, and any of them turns LoRA on") {
  lrhost::test::TempDir dir("lerobot_train_peft");
  const std::string base = pretrained_folder(dir, "smolvla").string();
  auto plan = plan_lerobot_train({"--policy.path=" + base, "--peft.r=8", "--peft.lora_alpha=32",
                                  "--peft.target_modules=[q_proj, \"v_proj\"]",
                                  "--peft.full_training_modules=state_proj", "--peft.init_type=gaussian"});
  CHECK(has(plan.overrides, "policy.peft.r=8"));
  CHECK(has(plan.overrides, "policy.peft.lora_alpha=32"));
  CHECK(has(plan.overrides, R"(policy.peft.target_module_names=["q_proj","v_proj"])"));
  CHECK(has(plan.overrides, R"(policy.peft.full_training_modules=["state_proj"])"));
  CHECK(has(plan.overrides, "policy.peft.init_type=gaussian"));
  CHECK(has(plan.overrides, "policy.peft.method_type=LORA"));  // PeftConfig's default method
  // A regex stays a regex; an explicit method_type is not doubled.
  auto regex =
      plan_lerobot_train({"--policy.path=" + base, "--peft.method_type=LORA", "--peft.target_modules=all-linear"});
  CHECK(has(regex.overrides, "policy.peft.target_modules=all-linear"));
  CHECK(std::count(regex.overrides.begin(), regex.overrides.end(), "policy.peft.method_type=LORA") == 1);
  // No --peft flag: no adapters.
  auto plain = plan_lerobot_train({"--policy.path=" + base});
  CHECK(std::none_of(plain.overrides.begin(), plain.overrides.end(),
                     [](const std::string& o) { return o.starts_with("policy.peft."); }));
}

TEST_CASE("lerobot-train: optimizer flags follow use_policy_training_preset as LeRobot reads them") {
  // With the preset (LeRobot's default) lerobot-train drops --optimizer.* (the guide's LR-scaling
  // example types one): trained as LeRobot trains it, with the preset, and a warning says so.
  auto ignored = plan_lerobot_train({"--policy.type=act", "--optimizer.lr=2e-4", "--scheduler.num_warmup_steps=9"});
  REQUIRE(ignored.warnings.size() == 2);
  CHECK(ignored.warnings[0].starts_with("--optimizer.lr=2e-4 HAS NO EFFECT"));
  CHECK(ignored.warnings[0].find("--policy.optimizer_lr=2e-4") != std::string::npos);
  CHECK(std::none_of(ignored.overrides.begin(), ignored.overrides.end(),
                     [](const std::string& o) { return o.find("optimizer_lr") != std::string::npos; }));
  auto plan = plan_lerobot_train({"--policy.type=smolvla", "--use_policy_training_preset=false",
                                  "--optimizer.type=adamw", "--optimizer.lr=2e-4", "--optimizer.grad_clip_norm=5",
                                  "--scheduler.num_warmup_steps=50", "--scheduler.decay_lr=1e-6"});
  CHECK(has(plan.overrides, "policy.optimizer_lr=2e-4"));
  CHECK(has(plan.overrides, "optimizer.grad_clip_norm=5"));
  CHECK(has(plan.overrides, "policy.scheduler_warmup_steps=50"));
  CHECK(has(plan.overrides, "policy.scheduler_decay_lr=1e-6"));
  CHECK(error_of({"--policy.type=diffusion", "--use_policy_training_preset=false", "--optimizer.type=sgd"})
            .find("preset optimizer 'adam'") != std::string::npos);
  CHECK(error_of({"--policy.type=act", "--use_policy_training_preset=false", "--scheduler.num_decay_steps=9"})
            .find("no field policy.scheduler_decay_steps") != std::string::npos);
}

TEST_CASE("lerobot-train: wandb, resume and the hint for a LeRobot flag on the normal path") {
  auto plan = plan_lerobot_train({"--policy.type=act", "--wandb.enable=true", "--wandb.project=robots"});
  CHECK(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& note) {
    return note.find("wandb sync --sync-tensorboard") != std::string::npos;
  }));
  lrhost::test::TempDir dir("lerobot_train_resume");
  const fs::path config = dir / "run/checkpoints/000010/pretrained_model/train_config.json";
  fs::create_directories(config.parent_path());
  std::ofstream(config) << "{}";
  auto resumed = plan_lerobot_train({"--resume=true", "--config_path=" + config.string(), "--steps=40"});
  REQUIRE(resumed.resume_from);
  CHECK(*resumed.resume_from == dir / "run/checkpoints/000010");
  CHECK(resumed.overrides == std::vector<std::string>{"steps=40"});
  CHECK(resumed.equivalent_command().starts_with("lrhost resume "));
  CHECK(error_of({"--resume=true"}).find("needs --config_path") != std::string::npos);
  CHECK(error_of({"--resume=true", "--config_path=" + (dir / "absent.json").string()}).find("no such file") !=
        std::string::npos);

  CHECK(lrhost::cli::lerobot_style_flag_hint("--batch_size=4").find("without dashes: batch_size=4") !=
        std::string::npos);
  CHECK(lrhost::cli::lerobot_style_flag_hint("--policy.chunk_size=20").find("policy.chunk_size=20") !=
        std::string::npos);
  CHECK(lrhost::cli::lerobot_style_flag_hint("--wandb.enable=true").find("is a lerobot-train flag") !=
        std::string::npos);
  CHECK(lrhost::cli::lerobot_style_flag_hint("--bogus").empty());
}

TEST_CASE("fine-tuning: the command line's policy fields go on top of the pretrained config.json") {
  lrhost::test::TempDir dir("pretrained_overrides");
  const auto act = pretrained_folder(dir, "act");
  json recipe = json::parse(lrhost::policy::default_policy_config("act").dump());
  recipe["chunk_size"] = 20;  // the recipe's own default: never applied to a pretrained policy
  recipe["optimizer_lr"] = 0.5;
  recipe["pretrained_path"] = act.string();
  auto table = lrhost::policy::pretrained_policy_table(recipe, {"optimizer_lr"});
  CHECK(table.policy["optimizer_lr"].get<double>() == 0.5);
  CHECK(table.policy["chunk_size"] == 100);  // config.json's
  CHECK(table.from_command_line == std::vector<std::string>{"optimizer_lr"});
  // Fields config.json holds as null are dropped, not kept as null (a Lua table cannot hold them).
  bool null_kept = false;
  for (const auto& [field, value] : table.policy.items()) null_kept = null_kept || value.is_null();
  CHECK_FALSE(null_kept);
  auto config = lrhost::policy::apply_policy_changes(
      nlohmann::ordered_json::parse(lrhost::policy::default_policy_config_with_nulls("act").dump()), table.policy, "x");
  CHECK(config["optimizer_lr"].get<double>() == 0.5);

  auto message = [&](const std::set<std::string>& fields, json changes) {
    try {
      for (auto& [key, value] : changes.items()) recipe[key] = value;
      lrhost::policy::pretrained_policy_table(recipe, fields);
    } catch (const lrhost::util::ConfigError& error) {
      return lrhost::util::describe(error);
    }
    return std::string("no error");
  };
  CHECK(message({"chunk_size"}, {{"chunk_size", 20}})
            .find("policy.chunk_size = 20 cannot change when fine-tuning: it "
                  "shapes the pretrained weights") != std::string::npos);
  CHECK(message({"dim_model"}, {{"chunk_size", 100}, {"dim_model", 64}}).find("policy.dim_model") != std::string::npos);
  CHECK(message({"optimizer_lr"}, {{"dim_model", 512}, {"optimizer_lr", "fast"}}).find("has the wrong type") !=
        std::string::npos);
  recipe["optimizer_lr"] = 0.5;
  recipe["type"] = "smolvla";
  CHECK(message({}, json::object()).find("is a 'act' policy") != std::string::npos);

  // lrhost's own run options (not in LeRobot's config.json) come from the recipe when fine-tuning too.
  {
    const auto& spec = lrhost::policy::policy_spec("smolvla");
    REQUIRE_FALSE(spec.run_option_fields.empty());
    auto lerobot_config = lrhost::policy::default_policy_config_with_nulls("smolvla");
    for (const auto& field : spec.run_option_fields) lerobot_config.erase(field);
    fs::path folder = dir / "pretrained_smolvla_lerobot";
    fs::create_directories(folder);
    std::ofstream(folder / "config.json") << lerobot_config.dump(4);
    json smolvla = json::parse(lrhost::policy::default_policy_config("smolvla").dump());
    smolvla["pretrained_path"] = folder.string();
    smolvla["cache_vision_features"] = true;
    smolvla["gradient_checkpointing"] = true;
    smolvla["chunk_size"] = 7;  // a LeRobot field: config.json's value wins
    auto run = lrhost::policy::pretrained_policy_table(smolvla, {});
    CHECK(run.policy["cache_vision_features"] == true);
    CHECK(run.policy["gradient_checkpointing"] == true);
    CHECK(run.policy["chunk_size"] == lerobot_config["chunk_size"]);
    CHECK(run.from_command_line.empty());
  }

  CHECK(lrhost::policy::explicit_policy_fields(
            {"policy.chunk_size=3", "steps=2", R"(policy={"n_heads": 2})", "policy.optimizer_betas=[0.9,0.95]"}) ==
        std::set<std::string>{"chunk_size", "n_heads", "optimizer_betas"});
  // The fields declared to shape weights exist in each policy's config.
  for (const char* type : {"act", "diffusion", "smolvla"}) {
    auto fields = lrhost::policy::default_policy_config_with_nulls(type);
    for (const auto& field : lrhost::policy::weight_shape_fields(type)) CHECK_MESSAGE(fields.contains(field), field);
  }
}

TEST_CASE("lerobot-train: pi0/pi05 map onto their recipes; a bfloat16 policy trains under bf16 autocast") {
  auto plan = plan_lerobot_train({"--policy.type=pi05", "--policy.dtype=bfloat16"});
  CHECK(fs::path(plan.recipe).filename() == "pi05.lua");
  // The recipe's tiny-model defaults give way to LeRobot's.
  CHECK(has(plan.overrides, "policy.geometry="));
  CHECK(has(plan.overrides, "policy.tokenizer_name=google/paligemma-3b-pt-224"));
  CHECK(has(plan.overrides, "policy.image_resolution=[224,224]"));
  CHECK(has(plan.overrides, "policy.chunk_size=50"));
  CHECK(has(plan.overrides, "policy.tokenizer_max_length=200"));
  // lerobot-train 0.6.1 derives accelerate's mixed precision from the policy's dtype.
  CHECK(has(plan.overrides, "accelerator.mixed_precision=bf16"));
  CHECK(!has(plan_lerobot_train({"--policy.type=pi0"}).overrides, "accelerator.mixed_precision=bf16"));
  auto typed = plan_lerobot_train({"--policy.type=pi0", "--policy.dtype=bfloat16", "--mixed_precision=no"});
  CHECK(!has(typed.overrides, "accelerator.mixed_precision=bf16"));
  // From a folder whose config.json says bfloat16, unless the command line sets the dtype.
  lrhost::test::TempDir dir;
  fs::path folder = dir / "pretrained_pi05_bf16";
  fs::create_directories(folder);
  auto config = lrhost::policy::default_policy_config_with_nulls("pi05");
  config["dtype"] = "bfloat16";
  std::ofstream(folder / "config.json") << config.dump(4);
  CHECK(has(plan_lerobot_train({"--policy.path=" + folder.string()}).overrides, "accelerator.mixed_precision=bf16"));
  CHECK(!has(plan_lerobot_train({"--policy.path=" + folder.string(), "--policy.dtype=float32"}).overrides,
             "accelerator.mixed_precision=bf16"));
}

TEST_CASE("lerobot-train: the guides' spellings (--policy=act, dash-less arguments, the script path)") {
  // draccus's choice spelling is --policy.type.
  auto choice = plan_lerobot_train({"--policy=act", "--dataset.repo_id=lerobot/pusht", "--output_dir=o"});
  auto typed = plan_lerobot_train({"--policy.type=act", "--dataset.repo_id=lerobot/pusht", "--output_dir=o"});
  CHECK(fs::path(choice.recipe).filename() == "act_ddp.lua");
  CHECK(choice.overrides == typed.overrides);
  CHECK(error_of({"--policy=act", "--policy.type=diffusion"}).find("policy type is given twice") != std::string::npos);

  // The Chinese guide: no dashes after the script path. Table keys are lerobot-train's flags (the
  // pretrained path picks the recipe, output_dir names the run folder); other keys and lrhost's
  // own optimizer.*/eval.* tables pass through as overrides.
  lrhost::test::TempDir dir("lerobot_train_dashless");
  const auto smolvla = pretrained_folder(dir, "smolvla").string();
  auto bare = plan_lerobot_train({"--num_processes=4", "src/lerobot/scripts/lerobot_train.py",
                                  "policy.pretrained_path=" + smolvla, "dataset.repo_id=user/so100", "batch_size=12",
                                  "output_dir=outputs/smolvla_4gpu", "num_workers=0", "wandb.enable=true",
                                  "eval_episodes=2", "optimizer.grad_clip_norm=5", "eval.episodes=3"});
  CHECK(fs::path(bare.recipe).filename() == "smolvla.lua");
  CHECK(bare.nproc == 4);
  CHECK(bare.run_dir == "outputs/smolvla_4gpu");
  for (const std::string& expected :
       {"policy.pretrained_path=" + smolvla, std::string("dataset.repo_id=user/so100"), std::string("batch_size=12"),
        std::string("num_workers=1"), std::string("eval_episodes=2"), std::string("optimizer.grad_clip_norm=5"),
        std::string("eval.episodes=3")})
    CHECK_MESSAGE(has(bare.overrides, expected), expected);
  CHECK(bare.overrides.back() == "eval.episodes=3");  // lrhost overrides go last, in order
  CHECK(std::any_of(bare.notes.begin(), bare.notes.end(),
                    [](const std::string& n) { return n.find("wandb sync") != std::string::npos; }));
  // `$(which lerobot-train)` expanded to a path, or to nothing inside quotes, is skipped too.
  CHECK(plan_lerobot_train(
            {"/usr/local/bin/lerobot-train", "", "--policy=act", "--dataset.repo_id=lerobot/pusht", "--output_dir=o"})
            .overrides == typed.overrides);
  CHECK(error_of({"train.py", "--policy=act"}).find("'train.py' is another training script") != std::string::npos);
  CHECK(error_of({"--policy=act", "-x"}).find("unexpected argument '-x'") != std::string::npos);
}

TEST_CASE("lerobot-train: accelerate's launch options that change nothing here, or map onto lrhost's") {
  auto ported =
      plan_lerobot_train({"--num_processes=2", "--main_process_port=29501", "--num_machines=1", "--machine_rank=0",
                          "--dynamo_backend=NO", "--gpu_ids=all", "--policy=act", "--output_dir=o"});
  CHECK(ported.master_port == 29501);
  CHECK(!ported.cuda_visible_devices);
  CHECK(ported.equivalent_command().find("--nproc 2 --master-port 29501 --run-dir o") != std::string::npos);
  // One process starts no launcher, so there is no port to set.
  auto single = plan_lerobot_train({"--main_process_port=29501", "--policy=act"});
  CHECK(!single.master_port);
  CHECK(has(single.notes, "--main_process_port=29501: one process needs no port; ignored"));
  CHECK(error_of({"--policy=act", "--num_processes=2", "--main_process_port=70000"}).find("<= 65535") !=
        std::string::npos);
  CHECK(error_of({"--policy=act", "--num_machines=2"}).find("--nnodes N --node-rank K") != std::string::npos);
  CHECK(error_of({"--policy=act", "--machine_rank=1"}).find("--node-rank K") != std::string::npos);
  CHECK(error_of({"--policy=act", "--dynamo_backend=inductor"}).find("no torch.compile") != std::string::npos);
  // --gpu_ids=0,1: the run sees those GPUs only, as accelerate sets CUDA_VISIBLE_DEVICES.
  auto ids = plan_lerobot_train({"--multi_gpu", "--num_processes=2", "--gpu_ids=2,3", "--policy=act"});
  CHECK(ids.cuda_visible_devices == "2,3");
  CHECK(ids.equivalent_command().starts_with("CUDA_VISIBLE_DEVICES=2,3 lrhost "));
  CHECK(error_of({"--policy=act", "--num_processes=2", "--gpu_ids=0"}).find("names 1 GPU(s)") != std::string::npos);
  CHECK(error_of({"--policy=act", "--gpu_ids=0,x"}).find("'x' is not a GPU index") != std::string::npos);
  CHECK(error_of({"--policy=act", "--gpu_ids=0,0"}).find("lists GPU 0 twice") != std::string::npos);
}

TEST_CASE("lerobot-train: dataset options, and --policy.repo_id trains with a loud warning that nothing uploads") {
  auto plan = plan_lerobot_train({"--policy=act", "--tolerance_s=1e-3", "--dataset.image_transforms.enable=true",
                                  "--dataset.image_transforms.max_num_transforms=2",
                                  "--dataset.image_transforms.tfs.brightness.weight=2",
                                  "--dataset.use_imagenet_stats=false", "--output_dir=outputs/act"});
  for (const std::string expected :
       {"tolerance_s=1e-3", "dataset.image_transforms.enable=true", "dataset.image_transforms.max_num_transforms=2",
        "dataset.image_transforms.tfs.brightness.weight=2", "dataset.use_imagenet_stats=false"})
    CHECK_MESSAGE(has(plan.overrides, expected), expected);
  // The English guide's first command: --policy.repo_id without --policy.push_to_hub.
  auto pushed = plan_lerobot_train({"--policy.type=act", "--policy.repo_id=me/act", "--output_dir=outputs/act"});
  REQUIRE(pushed.warnings.size() == 1);
  CHECK(pushed.warnings[0].find("NOT UPLOADED") != std::string::npos);
  CHECK(pushed.warnings[0].find("hf upload me/act outputs/act/checkpoints/last/pretrained_model") != std::string::npos);
  CHECK(plan_lerobot_train({"--policy.type=act", "--policy.repo_id=me/act", "--policy.push_to_hub=false"})
            .warnings.empty());
}
