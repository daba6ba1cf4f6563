// Whether and from where a run resumes: lr.checkpoint's `resume` option (false | true | "auto" | a
// folder), what the launcher says through the environment (a restarted group, `lrhost resume DIR`,
// --overwrite) and what the output folder already holds. These decisions live here, next to the
// checkpoint manager they drive, rather than in the Lua binding, so that they are one tested piece of
// C++ and the binding only translates Lua values into these calls.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace lrhost::ckpt {

class CheckpointManager;

// lr.checkpoint's `resume` as the recipe gave it; all defaults: resume = false (a fresh run).
struct ResumeRequest {
  bool required = false;                      // resume = true: fail without a checkpoint
  bool auto_resume = false;                   // resume = "auto": resume when a checkpoint exists
  std::optional<std::filesystem::path> path;  // resume = "<checkpoint folder>"
};

// A string-typed `resume` (a config key given on the command line): "auto", "true", "false" or an
// existing folder. Anything else is a ConfigError saying what is accepted.
ResumeRequest parse_resume_text(const std::string& text);

// The launcher's variables that bear on resuming, as read from the process (see from_process).
struct ResumeEnvironment {
  std::string restart_count;  // LRHOST_RESTART_COUNT: > 0 in a group restarted by --max-restarts
  std::string resume_from;    // LRHOST_RESUME_FROM: the checkpoint `lrhost resume DIR` continues from
  std::string overwrite;      // LRHOST_OVERWRITE: "1" when the run was started with --overwrite

  static ResumeEnvironment from_process();
  bool restarted() const;
};

enum class ResumeMode {
  fresh,       // start at step 1
  if_present,  // resume from the newest checkpoint when there is one ("auto")
  required,    // resume, and fail without a checkpoint (true / a folder)
};

struct ResumePlan {
  ResumeMode mode = ResumeMode::fresh;
  std::optional<std::filesystem::path> from;  // an explicit checkpoint; otherwise the newest one
};

// Decided when the checkpoint is built. A restarted group treats resume = false as "auto" (starting
// again from step 1 would overwrite what the failed attempt saved), and resume = true follows
// `lrhost resume DIR` only in its first attempt. A fresh run whose output folder already holds
// checkpoints is a ConfigError unless --overwrite was given; then the old checkpoints are moved aside
// (every rank must call this, as for CheckpointManager::set_aside_checkpoints).
ResumePlan plan_resume(const ResumeRequest& request, const ResumeEnvironment& environment, CheckpointManager& manager);

// The checkpoint to restore for `plan`, or nullopt to start at step 1 (a fresh plan, or "auto" with no
// checkpoint yet). ConfigError when the plan requires a checkpoint and there is none, or when the
// checkpoint already went past `total_steps` (> 0; `total_steps_source` names where that came from):
// the loop would train nothing and look finished. A checkpoint at exactly `total_steps` (a finished
// run) is resumed with a warning that it trains no step and how to train further: rerunning a
// finished job (a requeue, a scheduler's retry, a restarted group) stays a no-op that exits 0.
std::optional<std::filesystem::path> choose_resume_point(const CheckpointManager& manager, const ResumePlan& plan,
                                                         int64_t total_steps, const std::string& total_steps_source);

// The call order a checkpoint's user must keep: resume() once, and, in a resuming run, before any
// save() (saving first could overwrite the checkpoint it is about to resume from).
class ResumeSequence {
 public:
  explicit ResumeSequence(ResumePlan plan) : plan_(std::move(plan)) {}
  const ResumePlan& plan() const { return plan_; }
  // Marks resume() as called; ConfigError on a second call.
  void begin_resume();
  // ConfigError when saving `step` now could overwrite the checkpoint to resume from.
  void check_save(int64_t step) const;

 private:
  ResumePlan plan_;
  bool resume_called_ = false;
};

// A resumed run's loader must start where the checkpoint's stopped: `now` is the loader's state and
// `saved` the checkpoint's sampler entry (Loader:state() layout); ConfigError when epoch or start
// index differ. A null `saved` (no loader in the checkpoint) is never a mismatch.
void check_loader_matches(const nlohmann::json& now, const nlohmann::json& saved);

}  // namespace lrhost::ckpt
