// Unit tests of the resume decisions (host/ckpt/resume_policy.hpp): reading lr.checkpoint's `resume`
// option, the launcher's variables (restart, `lrhost resume DIR`, --overwrite), moving an old run's
// checkpoints aside, choosing the checkpoint to restore, the resume()/save() order and the loader
// position check, each with its error path.
#include <doctest/doctest.h>

#include <cstdlib>

#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/resume_policy.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

// At global scope, as the other test files of its unity batch declare them (a redeclaration is fine,
// an alias in an unnamed namespace next to a global one would be ambiguous).
namespace ckpt = lrhost::ckpt;
namespace fs = std::filesystem;
using lrhost::test::contains;
using lrhost::test::described_error;
using lrhost::test::TempDir;

namespace {

ckpt::CheckpointOptions resume_test_options(const fs::path& output_dir) {
  ckpt::CheckpointOptions options;
  options.output_dir = output_dir;
  options.total_steps = 10;
  return options;
}

// A complete checkpoint of a small policy at `step` in `output_dir`.
fs::path save_resume_test_checkpoint(const fs::path& output_dir, int64_t step) {
  auto policy = lrhost::test::small_mlp();
  ckpt::CheckpointManager manager(resume_test_options(output_dir), nullptr);
  ckpt::CheckpointTargets targets;
  targets.policy = policy.get();
  return manager.save(step, targets);
}

bool has_superseded_folder(const fs::path& checkpoints_dir) {
  for (const auto& entry : fs::directory_iterator(checkpoints_dir))
    if (entry.path().filename().string().rfind("superseded-", 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("resume option text: auto, true, false, a folder; anything else is refused") {
  TempDir dir("resume_text");
  auto automatic = ckpt::parse_resume_text("auto");
  CHECK(automatic.auto_resume);
  CHECK_FALSE(automatic.required);
  CHECK(ckpt::parse_resume_text("true").required);
  auto no = ckpt::parse_resume_text("false");
  CHECK_FALSE(no.required);
  CHECK_FALSE(no.auto_resume);
  CHECK_FALSE(no.path);
  auto folder = ckpt::parse_resume_text(dir.path.string());
  REQUIRE(folder.path);
  CHECK((*folder.path == dir.path));
  const std::string error =
      described_error<lrhost::util::ConfigError>([&] { ckpt::parse_resume_text((dir.path / "missing").string()); });
  CHECK(contains(error, "is neither true, false, \"auto\" nor an existing checkpoint folder"));
  CHECK(contains(error, "missing"));
}

TEST_CASE("resume environment: the launcher's variables, read from the process") {
  CHECK_FALSE(ckpt::ResumeEnvironment{}.restarted());
  CHECK_FALSE(ckpt::ResumeEnvironment{"0", "", ""}.restarted());
  CHECK(ckpt::ResumeEnvironment{"2", "", ""}.restarted());
  ::setenv("LRHOST_RESTART_COUNT", "3", 1);
  ::setenv("LRHOST_RESUME_FROM", "/some/checkpoint", 1);
  ::setenv("LRHOST_OVERWRITE", "1", 1);
  auto environment = ckpt::ResumeEnvironment::from_process();
  ::unsetenv("LRHOST_RESTART_COUNT");
  ::unsetenv("LRHOST_RESUME_FROM");
  ::unsetenv("LRHOST_OVERWRITE");
  CHECK(environment.restart_count == "3");
  CHECK(environment.resume_from == "/some/checkpoint");
  CHECK(environment.overwrite == "1");
  CHECK(environment.restarted());
  auto unset = ckpt::ResumeEnvironment::from_process();
  CHECK(unset.restart_count.empty());
  CHECK(unset.resume_from.empty());
  CHECK(unset.overwrite.empty());
}

TEST_CASE("resume plan: the option, a restarted group and `lrhost resume DIR`") {
  TempDir dir("resume_plan");
  ckpt::CheckpointManager manager(resume_test_options(dir.path), nullptr);
  const ckpt::ResumeEnvironment plain;

  auto fresh = ckpt::plan_resume({}, plain, manager);
  CHECK((fresh.mode == ckpt::ResumeMode::fresh));
  CHECK_FALSE(fresh.from);

  ckpt::ResumeRequest automatic;
  automatic.auto_resume = true;
  CHECK((ckpt::plan_resume(automatic, plain, manager).mode == ckpt::ResumeMode::if_present));

  ckpt::ResumeRequest required;
  required.required = true;
  auto newest = ckpt::plan_resume(required, plain, manager);
  CHECK((newest.mode == ckpt::ResumeMode::required));
  CHECK_FALSE(newest.from);

  // `lrhost resume DIR` names the checkpoint through the environment, but only for the first attempt.
  const ckpt::ResumeEnvironment resume_command{"", "/runs/a/checkpoints/000004", ""};
  auto named = ckpt::plan_resume(required, resume_command, manager);
  REQUIRE(named.from);
  CHECK((*named.from == "/runs/a/checkpoints/000004"));
  const ckpt::ResumeEnvironment restarted_resume{"1", "/runs/a/checkpoints/000004", ""};
  CHECK_FALSE(ckpt::plan_resume(required, restarted_resume, manager).from);

  // An explicit folder wins over the environment.
  ckpt::ResumeRequest folder;
  folder.path = dir.path / "elsewhere";
  auto explicit_plan = ckpt::plan_resume(folder, resume_command, manager);
  CHECK((explicit_plan.mode == ckpt::ResumeMode::required));
  CHECK((explicit_plan.from == dir.path / "elsewhere"));

  // A restarted group treats resume = false as "auto", so it never starts again from step 1.
  const ckpt::ResumeEnvironment restarted{"2", "", ""};
  CHECK((ckpt::plan_resume({}, restarted, manager).mode == ckpt::ResumeMode::if_present));
}

TEST_CASE("resume plan: a fresh run over old checkpoints fails, or moves them aside with --overwrite") {
  TempDir dir("resume_overwrite");
  const fs::path old_step = save_resume_test_checkpoint(dir.path, 2);
  lrhost::test::write_text(dir.path / "metrics.jsonl", "{}\n");
  ckpt::CheckpointManager manager(resume_test_options(dir.path), nullptr);

  const std::string error =
      described_error<lrhost::util::ConfigError>([&] { ckpt::plan_resume({}, ckpt::ResumeEnvironment{}, manager); });
  CHECK(contains(error, "already holds checkpoints of another run, and this run starts fresh (resume = false)"));
  CHECK(contains(error, "--overwrite"));
  CHECK(fs::exists(old_step));  // nothing moved on the error path
  // LRHOST_OVERWRITE must be exactly "1".
  CHECK_THROWS_AS(ckpt::plan_resume({}, ckpt::ResumeEnvironment{"", "", "yes"}, manager), lrhost::util::ConfigError);

  // "auto" keeps them (it resumes from them).
  ckpt::ResumeRequest automatic;
  automatic.auto_resume = true;
  ckpt::plan_resume(automatic, ckpt::ResumeEnvironment{}, manager);
  CHECK(fs::exists(old_step));

  auto plan = ckpt::plan_resume({}, ckpt::ResumeEnvironment{"", "", "1"}, manager);
  CHECK((plan.mode == ckpt::ResumeMode::fresh));
  CHECK_FALSE(fs::exists(old_step));
  CHECK_FALSE(fs::exists(dir.path / "metrics.jsonl"));
  CHECK(has_superseded_folder(manager.checkpoints_dir()));
  CHECK_FALSE(manager.has_checkpoints());
}

TEST_CASE("resume point: none, the newest checkpoint, and the errors") {
  TempDir dir("resume_point");
  ckpt::CheckpointManager manager(resume_test_options(dir.path), nullptr);
  ckpt::ResumePlan required{ckpt::ResumeMode::required, std::nullopt};
  ckpt::ResumePlan if_present{ckpt::ResumeMode::if_present, std::nullopt};

  // No checkpoint yet: "auto" starts at step 1, true is an error.
  CHECK_FALSE(ckpt::choose_resume_point(manager, if_present, 10, "config key 'steps'"));
  const std::string none = described_error<lrhost::util::ConfigError>(
      [&] { ckpt::choose_resume_point(manager, required, 10, "config key 'steps'"); });
  CHECK(contains(none, "resume = true, but " + manager.checkpoints_dir().string() + " holds no complete checkpoint"));
  CHECK(contains(none, "resume = \"auto\""));

  const fs::path step4 = save_resume_test_checkpoint(dir.path, 4);
  CHECK_FALSE(ckpt::choose_resume_point(manager, ckpt::ResumePlan{}, 10, "config key 'steps'"));  // fresh
  CHECK((ckpt::choose_resume_point(manager, if_present, 10, "config key 'steps'") == step4));
  // A finished run (checkpoint at the last step) resumes, with a warning that it trains no step.
  CHECK((ckpt::choose_resume_point(manager, required, 4, "config key 'steps'") == step4));
  CHECK((ckpt::choose_resume_point(manager, if_present, 4, "config key 'steps'") == step4));
  CHECK((ckpt::choose_resume_point(manager, required, 0, "config key 'steps'") == step4));  // 0: unknown
  ckpt::ResumePlan named{ckpt::ResumeMode::required, step4};
  CHECK((ckpt::choose_resume_point(manager, named, 10, "config key 'steps'") == step4));

  // A run that ends before the checkpoint's step would train nothing.
  const std::string past = described_error<lrhost::util::ConfigError>(
      [&] { ckpt::choose_resume_point(manager, if_present, 3, "lr.checkpoint's total_steps"); });
  CHECK(contains(past, "already reached step 4, but this run ends at step 3 (lr.checkpoint's total_steps)"));
  CHECK(contains(past, "give steps=5 or more"));
  CHECK(contains(past, "steps=8"));
}

TEST_CASE("resume sequence: resume() once, and before save() in a resuming run") {
  ckpt::ResumeSequence fresh{ckpt::ResumePlan{}};
  CHECK_NOTHROW(fresh.check_save(5));  // a fresh run may save without resuming
  fresh.begin_resume();
  CHECK(contains(described_error<lrhost::util::ConfigError>([&] { fresh.begin_resume(); }),
                 "Checkpoint:resume() was already called"));

  ckpt::ResumeSequence resuming{ckpt::ResumePlan{ckpt::ResumeMode::if_present, std::nullopt}};
  const std::string early = described_error<lrhost::util::ConfigError>([&] { resuming.check_save(7); });
  CHECK(contains(early, "Checkpoint:save(7) before Checkpoint:resume()"));
  CHECK(contains(early, "call ckpt:resume()"));
  resuming.begin_resume();
  CHECK_NOTHROW(resuming.check_save(7));
}

TEST_CASE("resumed loader position: must match the checkpoint's sampler") {
  const nlohmann::json saved = {{"epoch", 1}, {"start_index", 40}};
  CHECK_NOTHROW(ckpt::check_loader_matches({{"epoch", 1}, {"start_index", 40}, {"seed", 3}}, saved));
  CHECK_NOTHROW(ckpt::check_loader_matches({{"epoch", 0}, {"start_index", 0}}, nullptr));  // no sampler saved
  const std::string error = described_error<lrhost::util::ConfigError>([&] {
    ckpt::check_loader_matches({{"epoch", 0}, {"start_index", 0}}, saved);
  });
  CHECK(contains(error, "the loader starts at epoch 0, index 0, but the checkpoint stopped at epoch 1, index 40"));
  CHECK(contains(error, "ckpt:loader_state()"));
  // A loader state without the fields never matches by accident.
  CHECK(contains(
      described_error<lrhost::util::ConfigError>([&] { ckpt::check_loader_matches(nlohmann::json::object(), saved); }),
      "the loader starts at epoch null, index null"));
}
