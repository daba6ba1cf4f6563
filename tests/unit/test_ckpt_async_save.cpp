// Asynchronous checkpoint saves (CheckpointOptions::async, host/ckpt/checkpoint_manager.hpp): the
// same bytes as a synchronous save even while training changes the model, at most one save in flight
// with every checkpoint complete after wait(), the host copy's size, and a writer failure reported
// with its cause by the next save.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/ckpt/checkpoint_manager.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/checksum_manifest.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/policy/registry.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::test::TempDir;
using nlohmann::json;

namespace {

// Big enough that the writer is still busy when training goes on (a few MiB of weights and moments).
const json kAsyncPolicy = {{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}, {"hidden_dims", {512, 512}}};

struct AsyncSetup {
  std::shared_ptr<lrhost::policy::Policy> policy;
  std::unique_ptr<lrhost::optim::Optimizer> optimizer;
  std::unique_ptr<lrhost::optim::LrScheduler> scheduler;
  lrhost::ckpt::CheckpointTargets targets() {
    return {policy.get(), optimizer.get(), scheduler.get(), [] { return json{{"epoch", 0}, {"start_index", 8}}; }};
  }
};

AsyncSetup make_async_setup() {
  torch::manual_seed(7);
  AsyncSetup s;
  s.policy = lrhost::policy::create_policy(kAsyncPolicy);
  s.optimizer = std::make_unique<lrhost::optim::Optimizer>(
      "adamw",
      std::vector<lrhost::policy::ParamGroup>{{"all", s.policy->trainable_parameters(), std::nullopt, std::nullopt}},
      json{{"lr", 1e-3}});
  lrhost::optim::ScheduleSpec spec;
  spec.kind = "cosine_with_warmup";
  spec.warmup_steps = 2;
  spec.total_steps = 20;
  s.scheduler = std::make_unique<lrhost::optim::LrScheduler>(*s.optimizer, spec);
  return s;
}

void train_async(AsyncSetup& s, int steps) {
  for (int i = 0; i < steps; ++i) {
    lrhost::policy::Batch batch{{"observation.state", torch::randn({8, 3})}, {"action", torch::randn({8, 2})}};
    s.policy->forward(batch).loss.backward();
    s.optimizer->step();
    s.optimizer->zero_grad();
    s.scheduler->step();
  }
}

lrhost::ckpt::CheckpointOptions async_options(const fs::path& dir, bool async) {
  lrhost::ckpt::CheckpointOptions options;
  options.output_dir = dir;
  options.total_steps = 20;
  options.train_config = {{"steps", 20}};
  options.batch_size = 8;
  options.async = async;
  return options;
}

}  // namespace

TEST_CASE("async save: the same bytes as a synchronous save, while training changes the model") {
  TempDir sync_dir("async_sync"), async_dir("async_async");
  auto s = make_async_setup();
  train_async(s, 2);
  lrhost::ckpt::CheckpointManager sync(async_options(sync_dir.path, false), nullptr);
  lrhost::ckpt::CheckpointManager async(async_options(async_dir.path, true), nullptr);
  auto generator = at::detail::getDefaultCPUGenerator();
  auto rng = generator.get_state();
  const auto sync_step = sync.save(2, s.targets());
  generator.set_state(rng);  // both saves record the same generator state
  const auto async_step = async.save(2, s.targets());
  train_async(s, 3);  // the model and optimizer move on while the writer writes
  async.wait();
  const auto files = lrhost::io::list_files(sync_step);
  CHECK(files == lrhost::io::list_files(async_step));
  CHECK(std::find(files.begin(), files.end(), "checksums.json") != files.end());
  for (const auto& file : files)
    CHECK_MESSAGE(lrhost::io::read_text_file(sync_step / file) == lrhost::io::read_text_file(async_step / file), file);
  CHECK(lrhost::ckpt::verify_checkpoint(async_step).mismatches.empty());
  // The host copy is the model's state dict plus the optimizer's state.
  int64_t expected = 0;
  for (const auto& [name, tensor] : s.policy->state_dict()) expected += static_cast<int64_t>(tensor.nbytes());
  for (const auto& [name, tensor] : lrhost::optim::optimizer_state_tensors(*s.optimizer))
    expected += static_cast<int64_t>(tensor.nbytes());
  CHECK(async.copied_bytes() == expected);
  CHECK(sync.copied_bytes() == 0);  // a synchronous save copies nothing
}

TEST_CASE("async save: one in flight, every checkpoint complete after wait(), keep_last applied") {
  TempDir dir("async_chain");
  auto s = make_async_setup();
  auto options = async_options(dir.path, true);
  options.keep_last = 2;
  lrhost::ckpt::CheckpointManager manager(options, nullptr);
  for (int step = 1; step <= 6; ++step) {
    train_async(s, 1);
    manager.save(step, s.targets());  // waits for the previous save first
  }
  manager.wait();
  auto scan = lrhost::ckpt::scan_checkpoints(dir.path / "checkpoints", false, true);
  REQUIRE(scan.complete.size() == 2);
  CHECK(scan.complete.back().filename() == "000006");
  CHECK(scan.temporary.empty());
  CHECK((scan.last_complete == scan.complete.back()));
  for (const auto& step_dir : scan.complete) CHECK(lrhost::ckpt::verify_checkpoint(step_dir).mismatches.empty());
}

TEST_CASE("async save: a writer failure fails the next save with the cause, and wait() too") {
  TempDir dir("async_fail");
  auto s = make_async_setup();
  lrhost::ckpt::CheckpointManager manager(async_options(dir.path, true), nullptr);
  manager.save(1, s.targets());
  manager.wait();
  // `last` becomes a non-empty folder: the writer's last step (moving the link) cannot succeed.
  fs::remove(dir.path / "checkpoints" / "last");
  fs::create_directories(dir.path / "checkpoints" / "last" / "x");
  train_async(s, 1);
  manager.save(2, s.targets());  // the snapshot succeeds; the writer fails in the background
  train_async(s, 1);
  std::string message;
  try {
    manager.save(3, s.targets());
  } catch (const std::exception& error) {
    message = error.what();
  }
  CHECK_MESSAGE(message.find("cannot move the symlink") != std::string::npos, message);
  CHECK_MESSAGE(message.find("last") != std::string::npos, message);
  // The failure is reported once; a save that fails the same way is reported by wait().
  manager.save(4, s.targets());
  CHECK_THROWS_WITH_AS(manager.wait(), doctest::Contains("cannot move the symlink"), std::exception);
}
