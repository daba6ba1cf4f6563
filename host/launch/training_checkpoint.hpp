// A training run's checkpoint session, what `lr.checkpoint` returns: it owns the output folder while
// it may write there (output_dir_lock.hpp), the CheckpointManager, the parts it saves (policy,
// optimizer, scheduler, loader position, FSDP shards) and the resume sequence. Built before anything
// is restored; resume() then picks the checkpoint (resume_policy.hpp), restores every part, seeks the
// loader and records the hints the launcher prints (resume_hint.hpp, interrupted_checkpoints.hpp),
// in one call once everything is built, as torchtitan's checkpointer.load does at the top of its
// trainer. The run's layout and batch figures come from the accelerator (-1 entries resolved), else
// from the loader or the config. It lives in launch/ because it ties the checkpoints to the job:
// the output-folder lock and the hints are the launcher's.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/resume_policy.hpp"

namespace lrhost::accel {
class Accelerator;
}
namespace lrhost::data {
class BatchLoader;
}

namespace lrhost::launch {

class RunDirLock;

// What a run hands its checkpoint session (lr.checkpoint's options, translated).
struct TrainingCheckpointRequest {
  std::filesystem::path output_dir;
  std::shared_ptr<policy::Policy> policy;  // required: the policy to save
  std::shared_ptr<optim::Optimizer> optimizer;
  // The scheduler and the optimizer it drives (which must be `optimizer` when both are given; alone,
  // the scheduler's optimizer is saved).
  std::shared_ptr<optim::LrScheduler> scheduler;
  std::shared_ptr<optim::Optimizer> scheduler_optimizer;
  std::shared_ptr<data::BatchLoader> loader;
  std::shared_ptr<accel::Accelerator> acc;
  std::shared_ptr<optim::WeightEma> ema;  // the EMA of the weights, when the run keeps one on this rank
  int64_t keep_last = 0;
  bool async = false;
  // Unset (total_steps: or 0): the config keys steps, save_freq and save_checkpoint.
  std::optional<int64_t> total_steps, save_freq;
  std::optional<bool> save_checkpoint;
  ckpt::ResumeRequest resume;
  nlohmann::json train_config = nlohmann::json::object();  // the resolved recipe config
  std::optional<ckpt::RecipeSnapshot> recipe;              // copied into every checkpoint when set
  // The run came from a recipe file, so `lrhost resume` can continue it when the config has a
  // `resume` key: the main process then records the interrupt hints.
  bool from_recipe_file = false;
};

class TrainingCheckpoint {
 public:
  // Checks and resolves the request (ConfigError naming the option), claims the output folder on the
  // job's rank 0 and plans what resume() will do. Nothing is restored yet.
  explicit TrainingCheckpoint(TrainingCheckpointRequest request);
  ~TrainingCheckpoint();

  // Restores the chosen checkpoint into every part and seeks the loader; the step restored, or 0
  // when starting fresh. Once, before the first save.
  int64_t resume();
  int64_t resume_step() const { return restored_ ? restored_->step : 0; }
  const std::optional<std::filesystem::path>& resumed_from() const { return restored_dir_; }
  // The loader state the checkpoint held (Loader:state() layout), or null.
  nlohmann::json restored_loader_state() const;
  // Checks that a loader created after resume() starts where the checkpoint's stopped, and saves its
  // position from now on.
  void track_loader(std::shared_ptr<data::BatchLoader> loader);

  bool is_save_step(int64_t step) const { return manager_->is_save_step(step); }
  // Writes checkpoints/<step>/ (see CheckpointManager::save); the step folder.
  std::filesystem::path save(int64_t step);
  void wait() { manager_->wait(); }
  int64_t copied_bytes() const { return manager_->copied_bytes(); }
  std::filesystem::path checkpoints_dir() const { return manager_->checkpoints_dir(); }
  // The newest complete checkpoint, or none.
  std::optional<std::filesystem::path> last_dir() const;
  // "lrhost resume /abs/output_dir ..." (resume_hint.hpp).
  std::string resume_command() const;

 private:
  ckpt::CheckpointTargets targets() const;
  void note_written() const;

  // The job's global rank 0 owns output_dir while this checkpoint may write there; declared first,
  // so it is released after the manager's last write.
  std::shared_ptr<const RunDirLock> output_dir_lock_;
  std::unique_ptr<ckpt::CheckpointManager> manager_;
  TrainingCheckpointRequest parts_;
  ckpt::ResumeSequence sequence_{ckpt::ResumePlan{}};
  int64_t total_steps_ = 0;
  std::string total_steps_source_;
  bool records_resume_hint_ = false;
  std::optional<ckpt::TrainingStep> restored_;
  std::optional<std::filesystem::path> restored_dir_;
};

}  // namespace lrhost::launch
