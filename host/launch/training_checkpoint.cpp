// A training run's checkpoint session; see training_checkpoint.hpp.
#include "host/launch/training_checkpoint.hpp"

#include "host/accel/accelerator.hpp"
#include "host/ckpt/checkpoint_layout.hpp"
#include "host/data/batch_loader.hpp"
#include "host/data/data_options.hpp"
#include "host/launch/interrupted_checkpoints.hpp"
#include "host/launch/output_dir_lock.hpp"
#include "host/launch/resume_hint.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"

namespace lrhost::launch {
namespace fs = std::filesystem;

namespace {

const nlohmann::json* find_path(const nlohmann::json& config, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &config;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
  }
  return node;
}

int64_t integer_at(const nlohmann::json& config, std::initializer_list<const char*> path, int64_t fallback) {
  const nlohmann::json* node = find_path(config, path);
  return node && node->is_number_integer() ? node->get<int64_t>() : fallback;
}

bool boolean_at(const nlohmann::json& config, std::initializer_list<const char*> path, bool fallback) {
  const nlohmann::json* node = find_path(config, path);
  return node && node->is_boolean() ? node->get<bool>() : fallback;
}

void check_request(const TrainingCheckpointRequest& request) {
  if (request.output_dir.empty()) throw util::ConfigError("lr.checkpoint: the output folder must not be empty");
  if (!request.policy) throw util::ConfigError("lr.checkpoint: 'policy' is required (the Policy to save)");
  if (request.keep_last < 0)
    throw util::ConfigError("lr.checkpoint: keep_last must be >= 0 (0 keeps every checkpoint), got " +
                            std::to_string(request.keep_last));
  if (request.scheduler && request.optimizer && request.scheduler_optimizer != request.optimizer)
    throw util::ConfigError("lr.checkpoint: the scheduler drives a different optimizer than 'optimizer'");
}

// The manager's options: the request's, with what it leaves unset taken from the accelerator (the
// layout as resolved, -1 entries filled in; DDP is dp_shard 1), the loader or the config.
ckpt::CheckpointOptions manager_options(const TrainingCheckpointRequest& request) {
  ckpt::CheckpointOptions options;
  options.output_dir = request.output_dir;
  options.keep_last = request.keep_last;
  options.async = request.async;
  options.train_config = request.train_config;
  options.recipe = request.recipe;
  const auto& config = request.train_config;
  options.total_steps = request.total_steps.value_or(0);
  if (options.total_steps == 0) options.total_steps = integer_at(config, {"steps"}, 0);
  options.save_freq = request.save_freq.value_or(integer_at(config, {"save_freq"}, 0));
  if (options.save_freq < 0)
    throw util::ConfigError("lr.checkpoint: save_freq must be >= 0 (0 saves only at total_steps), got " +
                            std::to_string(options.save_freq));
  options.save_checkpoint = request.save_checkpoint.value_or(boolean_at(config, {"save_checkpoint"}, true));
  if (request.acc) {
    options.batch_size = request.acc->config().batch_size;
    options.grad_accum_steps = request.acc->config().gradient_accumulation_steps;
    options.dp_replicate = request.acc->config().dp_replicate;
    options.dp_shard = request.acc->shard_size();
  } else {
    options.dp_replicate = integer_at(config, {"parallelism", "dp_replicate"}, 1);
    options.dp_shard = integer_at(config, {"parallelism", "dp_shard"}, 1);
  }
  if (options.batch_size == 0 && request.loader) options.batch_size = request.loader->sampler().options().batch_size;
  if (options.batch_size == 0) options.batch_size = integer_at(config, {"batch_size"}, 0);
  return options;
}

nlohmann::json loader_state(const data::BatchLoader& loader) {
  return data::loader_state_to_json(loader.position(), loader.sampler().options());
}

}  // namespace

TrainingCheckpoint::TrainingCheckpoint(TrainingCheckpointRequest request) : parts_(std::move(request)) {
  check_request(parts_);
  auto options = manager_options(parts_);
  total_steps_ = options.total_steps;
  total_steps_source_ = parts_.total_steps.value_or(0) != 0 ? "lr.checkpoint's total_steps" : "config key 'steps'";
  records_resume_hint_ = parts_.train_config.contains("resume") && parts_.from_recipe_file &&
                         (!parts_.acc || parts_.acc->is_main_process());
  dist::Comm* comm = parts_.acc ? &parts_.acc->comm() : nullptr;
  // The process's rank, not the accelerator's: a checkpoint without one still runs on every rank.
  if (util::rank_from_environment() == 0) output_dir_lock_ = claim_output_dir(options.output_dir);
  manager_ = std::make_unique<ckpt::CheckpointManager>(std::move(options), comm);
  // The manager keeps the config and the recipe snapshot; the session needs only the parts.
  parts_.train_config = nullptr;
  parts_.recipe.reset();
  sequence_ =
      ckpt::ResumeSequence(ckpt::plan_resume(parts_.resume, ckpt::ResumeEnvironment::from_process(), *manager_));
}

TrainingCheckpoint::~TrainingCheckpoint() = default;

ckpt::CheckpointTargets TrainingCheckpoint::targets() const {
  ckpt::CheckpointTargets t;
  t.policy = parts_.policy.get();
  t.optimizer = parts_.optimizer ? parts_.optimizer.get() : parts_.scheduler_optimizer.get();
  t.scheduler = parts_.scheduler.get();
  if (parts_.loader) {
    auto held = parts_.loader;
    t.sampler_state = [held] { return loader_state(*held); };
  }
  if (parts_.acc) t.fsdp = parts_.acc->fsdp();
  t.ema = parts_.ema.get();
  return t;
}

void TrainingCheckpoint::note_written() const {
  if (!records_resume_hint_) return;
  note_resumable(manager_->checkpoints_dir().parent_path());
  note_checkpoints_dir(manager_->checkpoints_dir());
}

int64_t TrainingCheckpoint::resume() {
  sequence_.begin_resume();
  if (auto dir = ckpt::choose_resume_point(*manager_, sequence_.plan(), total_steps_, total_steps_source_)) {
    // A folder naming one checkpoint must restore exactly that one; otherwise damaged data makes
    // resume fall back to the next older sound checkpoint.
    const bool fall_back = !sequence_.plan().from || !ckpt::names_one_checkpoint(*sequence_.plan().from);
    auto resumed = manager_->resume(*dir, targets(), fall_back);
    restored_ = resumed.step;
    restored_dir_ = resumed.dir;
    note_written();
    if (parts_.loader && !restored_->sampler.is_null())
      parts_.loader->seek(data::loader_position_from_json(restored_->sampler, parts_.loader->sampler().options(),
                                                          dir->string() + " training_step.json sampler"));
  }
  return resume_step();
}

nlohmann::json TrainingCheckpoint::restored_loader_state() const {
  return restored_ ? restored_->sampler : nlohmann::json();
}

void TrainingCheckpoint::track_loader(std::shared_ptr<data::BatchLoader> loader) {
  parts_.loader = std::move(loader);
  if (parts_.loader && restored_) ckpt::check_loader_matches(loader_state(*parts_.loader), restored_->sampler);
}

fs::path TrainingCheckpoint::save(int64_t step) {
  if (step < 0) throw util::ConfigError("Checkpoint:save: step must be >= 0, got " + std::to_string(step));
  sequence_.check_save(step);
  auto dir = manager_->save(step, targets());
  note_written();
  return dir;
}

std::optional<fs::path> TrainingCheckpoint::last_dir() const {
  return ckpt::scan_checkpoints(manager_->checkpoints_dir(), false).last_complete;
}

std::string TrainingCheckpoint::resume_command() const {
  return launch::resume_command(manager_->checkpoints_dir().parent_path());
}

}  // namespace lrhost::launch
