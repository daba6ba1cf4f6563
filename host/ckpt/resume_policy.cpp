// Resume decisions of a training run (see resume_policy.hpp); the messages name the option, the
// folder and what to do instead, as users meet them at the start of a run.
#include "host/ckpt/resume_policy.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <system_error>

#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/training_state.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {

ResumeRequest parse_resume_text(const std::string& text) {
  ResumeRequest request;
  if (text == "auto") {
    request.auto_resume = true;
  } else if (text == "true" || text == "false") {
    request.required = text == "true";
  } else {
    std::error_code ec;
    if (!std::filesystem::is_directory(text, ec))
      throw util::ConfigError("resume = \"" + text +
                              "\" is neither true, false, \"auto\" nor an existing checkpoint folder");
    request.path = text;
  }
  return request;
}

ResumeEnvironment ResumeEnvironment::from_process() {
  auto read = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
  };
  return {read("LRHOST_RESTART_COUNT"), read("LRHOST_RESUME_FROM"), read("LRHOST_OVERWRITE")};
}

bool ResumeEnvironment::restarted() const {
  return std::atoi(restart_count.c_str()) > 0;
}

ResumePlan plan_resume(const ResumeRequest& request, const ResumeEnvironment& environment, CheckpointManager& manager) {
  ResumePlan plan;
  bool auto_resume = request.auto_resume;
  const bool restarted = environment.restarted();
  if (restarted && !request.required && !request.path && !auto_resume) {
    spdlog::info("checkpoint: restart {} of the group: resume = false is treated as \"auto\"",
                 environment.restart_count);
    auto_resume = true;
  }
  if (request.path || request.required) {
    plan.mode = ResumeMode::required;
    // `lrhost resume DIR` names the checkpoint to continue from through the environment; a
    // restarted group of that job continues from its own newest checkpoint instead.
    if (request.path)
      plan.from = *request.path;
    else if (!environment.resume_from.empty() && !restarted)
      plan.from = environment.resume_from;
  } else if (auto_resume) {
    plan.mode = ResumeMode::if_present;
  } else if (manager.has_checkpoints()) {
    if (environment.overwrite != "1")
      throw util::ConfigError(
          "checkpoint: " + manager.checkpoints_dir().string() +
              " already holds checkpoints of another run, and this run starts fresh (resume = false)",
          "continue that run with resume=auto (or resume=true), start fresh in another output folder "
          "(--run-dir / output_dir=), or pass --overwrite to move the old checkpoints aside");
    manager.set_aside_checkpoints();
  }
  return plan;
}

std::optional<std::filesystem::path> choose_resume_point(const CheckpointManager& manager, const ResumePlan& plan,
                                                         int64_t total_steps, const std::string& total_steps_source) {
  if (plan.mode == ResumeMode::fresh) return std::nullopt;
  auto dir = manager.find_resume_dir(plan.from);
  if (!dir) {
    if (plan.mode == ResumeMode::required)
      throw util::ConfigError(
          "checkpoint: resume = true, but " + manager.checkpoints_dir().string() + " holds no complete checkpoint",
          "start without resume, or use resume = \"auto\" to resume only when one exists");
    spdlog::info("checkpoint: resume = \"auto\" and {} holds no checkpoint yet: starting at step 1",
                 manager.checkpoints_dir().string());
    return std::nullopt;
  }
  // A run told to stop before the step its checkpoint reached would silently train nothing (its
  // loop runs resume_step + 1 .. steps) and look finished.
  const int64_t reached = load_training_step(*dir / kTrainingStateDir).step;
  if (total_steps > 0 && total_steps == reached) {
    const std::string finished = "checkpoint: " + dir->string() + " is already at step " + std::to_string(reached) +
                                 " of " + std::to_string(total_steps) + " (" + total_steps_source + ")";
    const std::string further = "pass steps=M (or --steps=M to lrhost lerobot-train) with M > " +
                                std::to_string(reached) +
                                " to train further, e.g. `lrhost resume DIR steps=" + std::to_string(2 * reached) + "`";
    spdlog::warn("{}: the run is finished and trains no step; {}", finished, further);
  }
  if (total_steps > 0 && total_steps < reached)
    throw util::ConfigError("checkpoint: " + dir->string() + " already reached step " + std::to_string(reached) +
                                ", but this run ends at step " + std::to_string(total_steps) + " (" +
                                total_steps_source + ")",
                            "give steps=" + std::to_string(reached + 1) +
                                " or more to train on from that checkpoint (e.g. `lrhost "
                                "resume DIR steps=" +
                                std::to_string(2 * reached) + "`), or start a fresh run in another output folder");
  return dir;
}

void ResumeSequence::begin_resume() {
  if (resume_called_)
    throw util::ConfigError("Checkpoint:resume() was already called; call it once, before the first step");
  resume_called_ = true;
}

void ResumeSequence::check_save(int64_t step) const {
  if (plan_.mode != ResumeMode::fresh && !resume_called_)
    throw util::ConfigError("Checkpoint:save(" + std::to_string(step) +
                                ") before Checkpoint:resume(): this run "
                                "resumes (resume = true or \"auto\"), and saving first could overwrite the checkpoint",
                            "call ckpt:resume() once the policy, optimizer, scheduler and loader are built, "
                            "before the first step");
}

void check_loader_matches(const nlohmann::json& now, const nlohmann::json& saved) {
  if (saved.is_null()) return;
  if (now.value("epoch", -1) != saved.value("epoch", -2) ||
      now.value("start_index", -1) != saved.value("start_index", -2))
    throw util::ConfigError("checkpoint: the loader starts at epoch " + now.value("epoch", nlohmann::json()).dump() +
                                ", index " + now.value("start_index", nlohmann::json()).dump() +
                                ", but the checkpoint stopped at epoch " +
                                saved.value("epoch", nlohmann::json()).dump() + ", index " +
                                saved.value("start_index", nlohmann::json()).dump(),
                            "track the loader before ckpt:resume() (or pass loader = to lr.checkpoint), or build "
                            "it with state = ckpt:loader_state()");
}

}  // namespace lrhost::ckpt
