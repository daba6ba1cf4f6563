// Unit tests of the training-state half of checkpoints: optimizer/scheduler state files in torch
// 2.11's layout and their exact restore, RNG state, training_step.json, atomic folders, and the
// checkpoint manager (layout, `last`, keep_last, interrupted saves, resume, folder resolution).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <fstream>
#include <random>

#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/training_state.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;
using lrhost::test::described_error;
using lrhost::test::flip_bit;
using lrhost::test::write_text;

namespace fs = std::filesystem;
using lrhost::test::TempDir;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const json kPolicy = {{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}, {"hidden_dims", {4}}};

struct Setup {
  std::shared_ptr<lrhost::policy::Policy> policy;
  std::unique_ptr<lrhost::optim::Optimizer> optimizer;
  std::unique_ptr<lrhost::optim::LrScheduler> scheduler;
};

// Two groups (the second with its own lr), as ACT's backbone group.
Setup make_setup(const std::string& kind = "adamw", uint64_t seed = 1) {
  torch::manual_seed(seed);
  Setup s;
  s.policy = lrhost::policy::create_policy(kPolicy);
  auto params = s.policy->trainable_parameters();
  std::vector<lrhost::policy::ParamGroup> groups{{"main", {params[0], params[1]}, std::nullopt, std::nullopt},
                                                 {"head", {params[2], params[3]}, 1e-4, std::nullopt}};
  s.optimizer = std::make_unique<lrhost::optim::Optimizer>(kind, groups, json{{"lr", 1e-3}, {"weight_decay", 1e-4}});
  lrhost::optim::ScheduleSpec spec;
  spec.kind = "cosine_with_warmup";
  spec.warmup_steps = 2;
  spec.total_steps = 20;
  s.scheduler = std::make_unique<lrhost::optim::LrScheduler>(*s.optimizer, spec);
  return s;
}

void train(Setup& s, int steps, uint64_t data_seed) {
  torch::manual_seed(data_seed);
  for (int i = 0; i < steps; ++i) {
    lrhost::policy::Batch batch{{"observation.state", torch::randn({8, 3})}, {"action", torch::randn({8, 2})}};
    s.policy->forward(batch).loss.backward();
    s.optimizer->step();
    s.optimizer->zero_grad();
    s.scheduler->step();
  }
}

void check_same_params(const lrhost::policy::Policy& a, const lrhost::policy::Policy& b) {
  auto x = a.state_dict(), y = b.state_dict();
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK_MESSAGE((torch::equal(x[i].second, y[i].second)), x[i].first);
}

}  // namespace

TEST_CASE("optimizer state files have torch 2.11's layout: flat state tensors and typed param groups") {
  TempDir dir("optstate");
  auto s = make_setup();
  train(s, 3, 5);
  lrhost::optim::save_optimizer_state(*s.optimizer, dir.path, true);
  auto content = lrhost::io::read_safetensors(dir / "optimizer_state.safetensors");
  auto params = s.optimizer->parameters();
  CHECK((content.tensors.size() == 3 * params.size()));
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::string prefix = "state/" + std::to_string(i) + "/";
    const auto& step = content.at(prefix + "step");
    CHECK((step.dim() == 0));
    CHECK((step.scalar_type() == torch::kFloat32));
    CHECK((step.item<float>() == 3.0f));
    CHECK((content.at(prefix + "exp_avg").sizes() == params[i].sizes()));
    CHECK((content.at(prefix + "exp_avg_sq").sizes() == params[i].sizes()));
  }
  auto groups = ordered_json::parse(lrhost::io::read_text_file(dir / "optimizer_param_groups.json"));
  REQUIRE(groups.size() == 2);
  // Keys and their order as torch 2.11's AdamW.state_dict()["param_groups"] (with a scheduler).
  std::vector<std::string> keys;
  for (const auto& [key, value] : groups[0].items()) keys.push_back(key);
  CHECK((keys == std::vector<std::string>{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                                          "capturable", "differentiable", "fused", "decoupled_weight_decay",
                                          "initial_lr", "params"}));
  CHECK((groups[0]["betas"].dump() == "[0.9,0.999]"));
  CHECK((groups[0]["eps"].dump() == "1e-08"));
  CHECK(groups[0]["weight_decay"].is_number_float());
  CHECK(groups[0]["foreach"].is_null());
  CHECK((groups[0]["decoupled_weight_decay"] == true));
  CHECK((groups[0]["initial_lr"] == 1e-3));
  CHECK((groups[1]["initial_lr"] == 1e-4));
  CHECK((groups[0]["params"].dump() == "[0,1]"));
  CHECK((groups[1]["params"].dump() == "[2,3]"));
  auto text = lrhost::io::read_text_file(dir / "optimizer_param_groups.json");
  CHECK(text.rfind("[\n    {\n        \"lr\": ", 0) == 0);  // json.dump(indent=4)
  // Adam has decoupled_weight_decay false; no scheduler means no initial_lr.
  auto adam = make_setup("adam");
  auto adam_groups = lrhost::optim::optimizer_param_groups(*adam.optimizer, false);
  CHECK((adam_groups[0]["decoupled_weight_decay"] == false));
  CHECK_FALSE(adam_groups[0].contains("initial_lr"));
}

TEST_CASE("optimizer and scheduler state restore so training continues bit for bit") {
  for (std::string kind : {"adamw", "adam", "sgd"}) {
    CAPTURE(kind);
    TempDir dir("optrestore");
    auto a = make_setup(kind);
    train(a, 4, 11);
    lrhost::optim::save_optimizer_state(*a.optimizer, dir.path, true);
    lrhost::optim::save_scheduler_state(*a.scheduler, *a.optimizer, dir.path);
    lrhost::io::write_safetensors(dir / "weights.safetensors", a.policy->state_dict());
    train(a, 5, 12);

    auto b = make_setup(kind, 77);  // different init: everything must come from the files
    {
      torch::NoGradGuard no_grad;
      auto saved = lrhost::io::read_safetensors(dir / "weights.safetensors");
      auto targets = b.policy->state_dict();
      for (std::size_t i = 0; i < targets.size(); ++i) targets[i].second.copy_(saved.at(targets[i].first));
    }
    lrhost::optim::load_optimizer_state(*b.optimizer, dir.path);
    lrhost::optim::load_scheduler_state(*b.scheduler, *b.optimizer, dir.path);
    CHECK((b.scheduler->last_step() == 4));
    CHECK((b.optimizer->lr(1) == a.optimizer->initial_lr(1) * b.scheduler->spec().factor(4)));
    train(b, 5, 12);
    check_same_params(*a.policy, *b.policy);
    CHECK((b.optimizer->lr(0) == a.optimizer->lr(0)));
  }
}

TEST_CASE("scheduler_state.json has LambdaLR's keys") {
  auto s = make_setup();
  train(s, 3, 1);
  auto state = lrhost::optim::scheduler_state_json(*s.scheduler, *s.optimizer);
  std::vector<std::string> keys;
  for (const auto& [key, value] : state.items()) keys.push_back(key);
  CHECK((keys == std::vector<std::string>{"base_lrs", "last_epoch", "_step_count", "_is_initial",
                                          "_get_lr_called_within_step", "_last_lr", "lr_lambdas"}));
  CHECK((state["last_epoch"] == 3));
  CHECK((state["_step_count"] == 4));
  CHECK((state["base_lrs"].dump() == "[0.001,0.0001]"));
  CHECK((state["lr_lambdas"].dump() == "[null,null]"));
}

TEST_CASE("mismatched or corrupt optimizer state is refused with the file named") {
  TempDir dir("optbad");
  auto s = make_setup();
  train(s, 2, 3);
  lrhost::optim::save_optimizer_state(*s.optimizer, dir.path, true);
  // Another optimizer type.
  auto adam = make_setup("adam");
  CHECK(contains(described_error([&] { lrhost::optim::load_optimizer_state(*adam.optimizer, dir.path); }),
                 "decoupled_weight_decay = true but this optimizer is adam"));
  // A different group layout.
  torch::manual_seed(1);
  auto policy = lrhost::policy::create_policy(kPolicy);
  lrhost::optim::Optimizer one_group("adamw", {{"all", policy->trainable_parameters(), std::nullopt, std::nullopt}},
                                     json{{"lr", 1e-3}});
  CHECK(contains(described_error([&] { lrhost::optim::load_optimizer_state(one_group, dir.path); }),
                 "optimizer_param_groups.json: holds 2 parameter group(s), the optimizer has 1"));
  // A wrongly shaped state tensor.
  auto tensors = lrhost::optim::optimizer_state_tensors(*s.optimizer);
  tensors[1].second = torch::zeros({1});
  lrhost::io::write_safetensors(dir / "optimizer_state.safetensors", tensors);
  auto fresh = make_setup();
  CHECK(contains(described_error([&] { lrhost::optim::load_optimizer_state(*fresh.optimizer, dir.path); }),
                 "optimizer_state.safetensors: 'state/0/exp_avg' is [1]"));
  // Truncated JSON.
  write_text(dir / "optimizer_param_groups.json", "[{\"lr\": 0.1");
  CHECK(contains(described_error([&] { lrhost::optim::load_optimizer_state(*fresh.optimizer, dir.path); }),
                 "optimizer_param_groups.json: not valid JSON"));
}

TEST_CASE("the CPU generator state round trips through rng_state.safetensors") {
  TempDir dir("rng");
  torch::manual_seed(42);
  torch::randn({3});
  lrhost::ckpt::save_rng_state(dir.path);
  auto want = torch::randn({5});
  torch::manual_seed(7);
  lrhost::ckpt::load_rng_state(dir.path);
  CHECK((torch::equal(torch::randn({5}), want)));
  auto content = lrhost::io::read_safetensors(dir / "rng_state.safetensors");
  CHECK((content.at("torch_rng_state").scalar_type() == torch::kUInt8));
  CHECK((content.at("torch_rng_state").dim() == 1));
  lrhost::io::write_safetensors(dir / "rng_state.safetensors", {{"torch_rng_state", torch::zeros({3}, torch::kUInt8)}});
  CHECK(contains(described_error([&] { lrhost::ckpt::load_rng_state(dir.path); }), "rng_state.safetensors"));
}

TEST_CASE("training_step.json: LeRobot's fields plus the sampler, and the old layout") {
  TempDir dir("trainstep");
  lrhost::ckpt::TrainingStep step;
  step.step = 120;
  step.dp_world_size = 2;
  step.batch_size = 8;
  step.sampler = {{"epoch", 1}, {"start_index", 32}, {"batch_size", 8}, {"world_size", 2}};
  lrhost::ckpt::save_training_step(step, dir.path);
  auto text = lrhost::io::read_text_file(dir / "training_step.json");
  CHECK(ordered_json::parse(text).dump() ==
        R"({"step":120,"dp_world_size":2,"batch_size":8,"grad_accum_steps":1,"parallelism":{"dp_replicate":1,)"
        R"("dp_shard":1,"ring_degree":1,"ulysses_degree":1},"sampler":{"batch_size":8,"epoch":1,"start_index":32,)"
        R"("world_size":2}})");
  auto back = lrhost::ckpt::load_training_step(dir.path);
  CHECK((back.step == 120));
  CHECK((back.sampler == step.sampler));
  auto old = lrhost::ckpt::TrainingStep::from_json(json{{"step", 5}, {"num_processes", 4}, {"batch_size", 2}}, "old");
  CHECK((old.dp_world_size == 4));
  CHECK(old.sampler.is_null());
  write_text(dir / "training_step.json", "{\"step\": ");
  CHECK(contains(described_error([&] { lrhost::ckpt::load_training_step(dir.path); }),
                 "training_step.json: not valid JSON"));
  write_text(dir / "training_step.json", "{\"step\": \"ten\"}");
  CHECK(contains(described_error([&] { lrhost::ckpt::load_training_step(dir.path); }), "'step' must be an integer"));
}

TEST_CASE("an uncommitted atomic folder disappears; a committed one replaces the old folder") {
  TempDir dir("atomic");
  {
    lrhost::io::AtomicDir staging(dir / "000001");
    write_text(staging.path() / "x", "1");
  }
  CHECK_FALSE(fs::exists(dir / "000001"));
  CHECK(fs::is_empty(dir.path));
  for (const char* value : {"first", "second"}) {
    lrhost::io::AtomicDir staging(dir / "000001");
    write_text(staging.path() / "x", value);
    staging.commit();
  }
  CHECK((lrhost::io::read_text_file(dir / "000001" / "x") == "second"));
  CHECK((std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1));
}

TEST_CASE("step identifiers are zero-padded to max(6, digits of the total steps)") {
  CHECK((lrhost::ckpt::step_identifier(20, 100) == "000020"));
  CHECK((lrhost::ckpt::step_identifier(20000, 100000) == "020000"));
  CHECK((lrhost::ckpt::step_identifier(5, 12345678) == "00000005"));
  CHECK((lrhost::ckpt::step_identifier(5, 0) == "000005"));
}

TEST_CASE("checkpoint manager: layout, last link, keep_last, interrupted saves and resume") {
  TempDir dir("manager");
  auto a = make_setup();
  lrhost::ckpt::CheckpointOptions options;
  options.output_dir = dir.path;
  options.total_steps = 20;
  options.keep_last = 2;
  options.train_config = {{"steps", 20}, {"batch_size", 8}};
  options.batch_size = 8;
  lrhost::ckpt::CheckpointManager manager(options, nullptr);
  lrhost::ckpt::CheckpointTargets targets{a.policy.get(), a.optimizer.get(), a.scheduler.get(), [] {
                                            return json{{"epoch", 0}, {"start_index", 40}};
                                          }};
  train(a, 2, 1);
  auto first = manager.save(2, targets);
  CHECK((first == dir / "checkpoints" / "000002"));
  for (const char* file : {"pretrained_model/config.json", "pretrained_model/model.safetensors",
                           "pretrained_model/train_config.json", "training_state/optimizer_state.safetensors",
                           "training_state/optimizer_param_groups.json", "training_state/scheduler_state.json",
                           "training_state/rng_state.safetensors", "training_state/training_step.json"})
    CHECK_MESSAGE(fs::exists(first / file), std::string(file));
  CHECK_FALSE(fs::exists(first / "pretrained_model/train_launch.json"));  // no recipe, no snapshot
  CHECK(fs::read_symlink(dir / "checkpoints" / "last") == "000002");      // relative
  CHECK(json::parse(lrhost::io::read_text_file(first / "pretrained_model/train_config.json")) == options.train_config);
  train(a, 2, 2);
  manager.save(4, targets);
  train(a, 2, 3);
  auto third = manager.save(6, targets);
  // keep_last = 2 removed the oldest.
  CHECK_FALSE(fs::exists(first));
  CHECK(fs::exists(dir / "checkpoints" / "000004"));
  CHECK((fs::read_symlink(dir / "checkpoints" / "last") == "000006"));

  // A save killed half-way (its temporary folder) and a newer step folder that lacks files:
  // resume uses the last complete checkpoint, and the leftovers never count.
  fs::create_directories(dir / "checkpoints" / ".tmp-000008-4242" / "pretrained_model");
  fs::create_directories(dir / "checkpoints" / "000008" / "pretrained_model");
  auto scan = lrhost::ckpt::scan_checkpoints(dir / "checkpoints", false);
  CHECK((scan.last_complete == third));
  CHECK((scan.incomplete.size() == 1));
  CHECK((scan.temporary.size() == 1));
  // Even when `last` itself points to an incomplete folder, the newest complete one is used.
  lrhost::io::replace_symlink(dir / "checkpoints" / "last", "000008");
  CHECK((lrhost::ckpt::scan_checkpoints(dir / "checkpoints", false).last_complete == third));
  lrhost::io::replace_symlink(dir / "checkpoints" / "last", "000006");

  auto resume_dir = manager.find_resume_dir(std::nullopt);
  REQUIRE(resume_dir);
  auto b = make_setup("adamw", 55);
  torch::manual_seed(1234);  // the RNG must come back too
  lrhost::ckpt::CheckpointManager resumer(options, nullptr);
  auto resumed = resumer.resume(*resume_dir, {b.policy.get(), b.optimizer.get(), b.scheduler.get(), nullptr}, false);
  CHECK((resumed.dir == third));
  const auto& record = resumed.step;
  CHECK((record.step == 6));
  CHECK((record.sampler["start_index"] == 40));
  CHECK((record.batch_size == 8));
  CHECK_FALSE(fs::exists(dir / "checkpoints" / ".tmp-000008-4242"));  // cleaned on resume
  // The newer step folder is moved aside, never deleted, and `last` names the resumed step.
  CHECK_FALSE(fs::exists(dir / "checkpoints" / "000008"));
  fs::path aside;
  for (const auto& entry : fs::directory_iterator(dir / "checkpoints"))
    if (entry.path().filename().string().rfind("superseded-", 0) == 0) aside = entry.path();
  REQUIRE_FALSE(aside.empty());
  CHECK(fs::exists(aside / "000008" / "pretrained_model"));
  CHECK((fs::read_symlink(dir / "checkpoints" / "last") == "000006"));
  check_same_params(*a.policy, *b.policy);
  REQUIRE(b.policy->processors() == nullptr);
  train(a, 3, 9);
  train(b, 3, 9);
  check_same_params(*a.policy, *b.policy);

  // Folder resolution for `lrhost checkpoint info` / `lrhost resume`.
  CHECK((lrhost::ckpt::resolve_checkpoint_dir(dir.path) == third));
  CHECK((lrhost::ckpt::resolve_checkpoint_dir(dir / "checkpoints") == third));
  CHECK((lrhost::ckpt::resolve_checkpoint_dir(dir / "checkpoints" / "000004") == dir / "checkpoints" / "000004"));
  CHECK((lrhost::ckpt::resolve_checkpoint_dir(third / "pretrained_model") == third));
  CHECK(contains(
      described_error([&] { lrhost::ckpt::resolve_checkpoint_dir(dir / "checkpoints" / "000004" / "training_state"); }),
      "is not a checkpoint folder"));
  // An explicit incomplete checkpoint is refused.
  CHECK(contains(described_error([&] { manager.find_resume_dir(aside / "000008"); }), "incomplete checkpoint"));
  // A corrupt file of the chosen checkpoint is an error naming it, not a silent fresh start: found by
  // its checksums as it is read, or, without them, by the reader.
  write_text(third / "training_state" / "scheduler_state.json", "{");
  auto c = make_setup();
  auto resume_third = [&] {
    resumer.resume(third, {c.policy.get(), c.optimizer.get(), c.scheduler.get(), nullptr}, false);
  };
  CHECK(contains(described_error(resume_third), "000006 is damaged: training_state/scheduler_state.json: bytes 1-"));
  fs::remove(third / "checksums.json");
  CHECK(contains(described_error(resume_third), "scheduler_state.json: not valid JSON"));
}

namespace {

// Where a safetensors file's tensor data begins: 8 bytes of header length, then the JSON header.
uint64_t tensor_data_offset(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char size[8] = {};
  in.read(reinterpret_cast<char*>(size), 8);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | size[i];
  return 8 + header;
}

}  // namespace

TEST_CASE(
    "checkpoint checksums: 100 single-bit flips in model and optimizer tensor data, 100 detected with the byte range") {
  TempDir dir("checksums");
  auto a = make_setup();
  lrhost::ckpt::CheckpointOptions options;
  options.output_dir = dir.path;
  options.total_steps = 20;
  lrhost::ckpt::CheckpointManager manager(options, nullptr);
  lrhost::ckpt::CheckpointTargets targets{a.policy.get(), a.optimizer.get(), a.scheduler.get(), {}};
  train(a, 1, 1);
  auto older = manager.save(1, targets);
  train(a, 1, 2);
  auto step_dir = manager.save(2, targets);
  // The manifest is there, lists every other file, and the fresh checkpoint verifies.
  REQUIRE(fs::exists(step_dir / "checksums.json"));
  auto check = lrhost::ckpt::verify_checkpoint(step_dir);
  CHECK(check.ok());
  CHECK(check.unlisted.empty());
  CHECK((check.verified.size() == lrhost::io::list_files(step_dir).size() - 1));
  CHECK_FALSE(lrhost::ckpt::checkpoint_damage(step_dir));

  // Each flip is found as resume reads the file (not by a separate pass): without fallback the
  // error names the file and byte range; with it, resume restores the older checkpoint instead.
  // `lrhost checkpoint info`'s full verification names it too.
  // A resume from the older checkpoint sets the newer one aside (superseded-*/): put it back.
  auto put_back = [&] {
    for (const auto& entry : fs::directory_iterator(dir / "checkpoints"))
      if (entry.path().filename().string().rfind("superseded-", 0) == 0) {
        fs::rename(entry.path() / "000002", step_dir);
        fs::remove(entry.path());
      }
    lrhost::io::replace_symlink(dir / "checkpoints" / "last", "000002");
  };
  std::mt19937_64 random(34);
  int planted = 0, detected = 0, fell_back = 0;
  for (const char* name : {"pretrained_model/model.safetensors", "training_state/optimizer_state.safetensors"}) {
    const fs::path file = step_dir / name;
    const uint64_t begin = tensor_data_offset(file), size = fs::file_size(file);
    REQUIRE(begin < size);
    for (int i = 0; i < 50; ++i) {
      const uint64_t offset = begin + random() % (size - begin);
      const int bit = static_cast<int>(random() % 8);
      flip_bit(file, offset, bit);
      ++planted;
      // Named with the byte range (one 8 MiB chunk: these files are smaller, so chunk 0).
      const std::string range = std::string(name) + ": bytes 0-" + std::to_string(size - 1) + " data does not match";
      auto b = make_setup("adamw", 7);
      lrhost::ckpt::CheckpointTargets resumed_targets{b.policy.get(), b.optimizer.get(), b.scheduler.get(), {}};
      lrhost::ckpt::CheckpointManager resumer(options, nullptr);
      const std::string error = described_error([&] { resumer.resume(step_dir, resumed_targets, false); });
      auto data_damage = lrhost::ckpt::checkpoint_data_damage(step_dir);
      if (contains(error, range) && data_damage && contains(*data_damage, range))
        ++detected;
      else
        MESSAGE("undetected flip at ", name, " byte ", offset, ": ", error, " / ", data_damage.value_or("sound"));
      CHECK_FALSE(lrhost::ckpt::checkpoint_damage(step_dir));  // the cheap check cannot see it
      // With fallback: the older checkpoint, entirely (its weights), and the damaged one set aside.
      auto resumed = resumer.resume(step_dir, resumed_targets, true);
      if (resumed.dir == older && resumed.step.step == 1) ++fell_back;
      put_back();  // the folder the fallback set aside, for the next flip
      flip_bit(file, offset, bit);
    }
  }
  CHECK((planted == 100));
  CHECK((detected == 100));
  CHECK((fell_back == 100));
  CHECK(lrhost::ckpt::verify_checkpoint(step_dir).ok());
  // The older checkpoint's weights are what a fallback restores.
  {
    auto b = make_setup("adamw", 7), o = make_setup("adamw", 8);
    lrhost::ckpt::CheckpointManager resumer(options, nullptr);
    resumer.resume(older, {o.policy.get(), o.optimizer.get(), o.scheduler.get(), {}}, false);
    put_back();
    const fs::path model = step_dir / "pretrained_model/model.safetensors";
    flip_bit(model, fs::file_size(model) - 1, 0);
    resumer.resume(step_dir, {b.policy.get(), b.optimizer.get(), b.scheduler.get(), {}}, true);
    check_same_params(*o.policy, *b.policy);
    put_back();
    flip_bit(model, fs::file_size(model) - 1, 0);
  }

  // Without a manifest (as LeRobot writes them) a checkpoint is unverified, not damaged.
  fs::remove(step_dir / "checksums.json");
  auto unverified = lrhost::ckpt::verify_checkpoint(step_dir);
  CHECK_FALSE(unverified.has_manifest);
  CHECK_FALSE(lrhost::ckpt::checkpoint_damage(step_dir));
  CHECK((lrhost::ckpt::scan_checkpoints(dir / "checkpoints", false, true).last_complete == step_dir));

  // An lrhost checkpoint (pretrained_model/train_launch.json) always has its manifest: without it, it is
  // damaged, and resume falls back to the older sound one, the reason naming the missing manifest.
  if (!fs::exists(step_dir / "pretrained_model/train_launch.json"))
    write_text(step_dir / "pretrained_model/train_launch.json", "{}");
  const std::string lost = "its checksums.json is missing, but it is an lrhost checkpoint";
  auto damage = lrhost::ckpt::checkpoint_damage(step_dir);
  CHECK((damage && contains(*damage, lost)));
  auto data_damage = lrhost::ckpt::checkpoint_data_damage(step_dir);
  CHECK((data_damage && contains(*data_damage, lost)));
  CHECK((lrhost::ckpt::scan_checkpoints(dir / "checkpoints", false, true).last_complete == older));
  auto b = make_setup("adamw", 7);
  lrhost::ckpt::CheckpointTargets lost_targets{b.policy.get(), b.optimizer.get(), b.scheduler.get(), {}};
  lrhost::ckpt::CheckpointManager resumer(options, nullptr);
  CHECK(contains(described_error([&] { resumer.resume(step_dir, lost_targets, false); }), lost));
  auto resumed = resumer.resume(step_dir, lost_targets, true);
  CHECK((resumed.dir == older));
  CHECK((resumed.step.step == 1));
}
