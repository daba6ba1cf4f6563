// The checkpoint session behind lr.checkpoint (host/launch/training_checkpoint.hpp): its option
// checks, the one save rule and where it takes its figures from, and the save -> resume cycle that
// restores the optimizer, the scheduler and the step, with the call-order rules of resume_policy.hpp.
#include <doctest/doctest.h>

#include "host/launch/training_checkpoint.hpp"
#include "host/optim/optimizer.hpp"
#include "host/optim/scheduler.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::launch::TrainingCheckpoint;
using lrhost::launch::TrainingCheckpointRequest;
using lrhost::test::described_error;
using lrhost::test::TempDir;
using lrhost::util::ConfigError;

namespace {

TrainingCheckpointRequest request_for(const fs::path& output_dir) {
  TrainingCheckpointRequest request;
  request.output_dir = output_dir;
  request.policy = lrhost::test::small_mlp();
  request.train_config = {{"steps", 10}, {"save_freq", 4}, {"batch_size", 6}};
  return request;
}

}  // namespace

TEST_CASE("training checkpoint: the options it refuses, each named") {
  TempDir dir("training_checkpoint_options");
  auto without_policy = request_for(dir / "out");
  without_policy.policy = nullptr;
  CHECK(described_error<ConfigError>([&] { TrainingCheckpoint{without_policy}; }).find("'policy' is required") !=
        std::string::npos);
  auto keep = request_for(dir / "out");
  keep.keep_last = -1;
  CHECK(described_error<ConfigError>([&] { TrainingCheckpoint{keep}; }).find("keep_last must be >= 0") !=
        std::string::npos);
  auto freq = request_for(dir / "out");
  freq.save_freq = -2;
  CHECK(described_error<ConfigError>([&] { TrainingCheckpoint{freq}; }).find("save_freq must be >= 0") !=
        std::string::npos);
  auto mismatch = request_for(dir / "out");
  mismatch.optimizer =
      std::make_shared<lrhost::optim::Optimizer>("sgd", mismatch.policy->param_groups(), nlohmann::json{{"lr", 0.1}});
  mismatch.scheduler_optimizer =
      std::make_shared<lrhost::optim::Optimizer>("sgd", mismatch.policy->param_groups(), nlohmann::json{{"lr", 0.1}});
  mismatch.scheduler =
      std::make_shared<lrhost::optim::LrScheduler>(*mismatch.scheduler_optimizer, lrhost::optim::ScheduleSpec{});
  CHECK(described_error<ConfigError>([&] { TrainingCheckpoint{mismatch}; }).find("drives a different optimizer") !=
        std::string::npos);
  auto empty = request_for("");
  CHECK_THROWS_AS(TrainingCheckpoint{empty}, ConfigError);
}

TEST_CASE("training checkpoint: one save rule, from the config keys unless the options say otherwise") {
  TempDir dir("training_checkpoint_rule");
  {
    TrainingCheckpoint checkpoint(request_for(dir / "a"));  // save_freq 4, steps 10
    for (int64_t step : {4, 8, 10}) CHECK(checkpoint.is_save_step(step));
    for (int64_t step : {1, 3, 5, 9}) CHECK_FALSE(checkpoint.is_save_step(step));
  }
  {
    auto request = request_for(dir / "b");
    request.save_freq = 0;  // only the last step
    request.total_steps = 7;
    TrainingCheckpoint checkpoint(request);
    CHECK_FALSE(checkpoint.is_save_step(4));
    CHECK(checkpoint.is_save_step(7));
    CHECK_FALSE(checkpoint.is_save_step(10));
  }
  {
    auto request = request_for(dir / "c");
    request.train_config["save_checkpoint"] = false;
    TrainingCheckpoint checkpoint(request);
    CHECK_FALSE(checkpoint.is_save_step(4));
    CHECK_FALSE(checkpoint.is_save_step(10));
  }
}

TEST_CASE("training checkpoint: save, then a new session resumes the step, optimizer and scheduler") {
  TempDir dir("training_checkpoint_cycle");
  auto make = [&](bool resume) {
    auto request = request_for(dir / "out");
    request.optimizer = std::make_shared<lrhost::optim::Optimizer>("adamw", request.policy->param_groups(),
                                                                   nlohmann::json{{"lr", 0.1}});
    request.scheduler_optimizer = request.optimizer;
    lrhost::optim::ScheduleSpec linear;
    linear.kind = "linear_with_warmup";
    linear.total_steps = 10;
    request.scheduler = std::make_shared<lrhost::optim::LrScheduler>(*request.optimizer, linear);
    request.resume.required = resume;
    return request;
  };
  auto first = make(false);
  {
    TrainingCheckpoint checkpoint(first);
    CHECK(checkpoint.resume() == 0);
    CHECK_FALSE(checkpoint.resumed_from());
    CHECK_FALSE(checkpoint.last_dir());
    for (int i = 0; i < 4; ++i) first.scheduler->step();
    const auto folder = checkpoint.save(4);
    CHECK(checkpoint.last_dir() == folder);
    CHECK(checkpoint.checkpoints_dir() == dir / "out" / "checkpoints");
    CHECK(described_error<ConfigError>([&] { checkpoint.resume(); }).find("already called") != std::string::npos);
  }
  auto second = make(true);
  TrainingCheckpoint resumed(second);
  // A save before resume() could overwrite the checkpoint it is about to restore.
  CHECK(described_error<ConfigError>([&] { resumed.save(5); }).find("before Checkpoint:resume()") != std::string::npos);
  CHECK(resumed.resume() == 4);
  CHECK(resumed.resume_step() == 4);
  REQUIRE(resumed.resumed_from());
  CHECK(resumed.resumed_from()->filename() == "000004");
  CHECK(second.scheduler->last_step() == 4);
  CHECK(second.optimizer->lr(0) == doctest::Approx(first.optimizer->lr(0)));
  CHECK(resumed.restored_loader_state().is_null());  // no loader was saved
  CHECK(resumed.resume_command().find(fs::absolute(dir / "out").string()) != std::string::npos);
}
