// Training checkpoints in LeRobot's layout: <output_dir>/checkpoints/<step>/pretrained_model/
// (save_pretrained + train_config.json, the resolved recipe config, plus the run's recipe snapshot:
// train_recipe.lua, train_modules/ and train_launch.json, for `lrhost resume`) and
// training_state/ (optimizer, scheduler, RNG, training_step.json with the sampler position), with
// checkpoints/last a relative symlink to the newest complete one. A save is built in a temporary
// folder, fsynced and renamed into place, and only then is `last` moved, so a process killed at any
// moment leaves every earlier checkpoint intact. Rank 0 writes; every rank takes part in one
// all-reduce at the end of each save and resume (which also reports a failure on rank 0 to every
// rank), so a save can neither deadlock nor let a rank run ahead of an unfinished checkpoint.
// The last file written into the temporary folder is checksums.json (io/checksum_manifest.hpp): the
// size and per-8-MiB CRC32C of every other file; FSDP ranks each write rank_<r>.checksums.json for
// their own shard file next to it, which checksums.json names. Resume verifies every file it reads
// as it reads it (io/verified_reads.hpp: each rank its own share, so an FSDP rank its own shards) and
// falls back past a checkpoint whose data does not match; `lrhost checkpoint verify` reads every
// file. A checkpoint without a manifest (LeRobot's) is "unverified", not damaged.
//
// Asynchronous saves (CheckpointOptions::async): save() takes a snapshot on the calling (training)
// thread — the small files (configs, processors, recipe, RNG, scheduler, training_step.json) go
// straight into the temporary folder, every tensor to be saved is copied into host memory (pinned
// buffers, reused across saves, for CUDA tensors) — and returns; one writer thread per rank then
// writes the tensor files, checksums.json last, and renames the folder into place, the same code
// and the same bytes as a synchronous save (which is "snapshot, then write now"). At most one save
// is in flight: the next save() and wait() join the writer first and rethrow its failure on every
// rank (one all-reduce on the training thread; the writer never uses the communicator). FSDP: the
// gather stays a collective on the training thread; each rank of replica 0 writes its shard file and
// rank_<r>.checksums.json into the shared temporary shards folder, and rank 0's writer commits only
// once every rank's manifest is there (a rank whose writer failed leaves rank_<r>.failed with the
// cause instead, which fails rank 0's writer too). Until the rename nothing is a checkpoint, so
// resume never picks an unfinished one.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/ckpt/checkpoint_layout.hpp"
#include "host/ckpt/recipe_snapshot.hpp"
#include "host/ckpt/training_state.hpp"
#include "host/dist/comm.hpp"
#include "host/dist/fsdp/fsdp_engine.hpp"
#include "host/io/checksum_manifest.hpp"
#include "host/optim/optimizer.hpp"
#include "host/optim/scheduler.hpp"
#include "host/optim/weight_ema.hpp"
#include "host/policy/policy.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {

struct TensorFile;  // one safetensors file of a save (checkpoint_manager.cpp)

// What a checkpoint saves and restores; null members are skipped.
struct CheckpointTargets {
  policy::Policy* policy = nullptr;
  optim::Optimizer* optimizer = nullptr;
  optim::LrScheduler* scheduler = nullptr;
  std::function<nlohmann::json()> sampler_state;  // the loader position (Loader:state())
  // FSDP: the full state dict is gathered from every rank, and every rank of replica 0 writes its
  // parameter and optimizer shards (sharded_state.hpp) instead of optimizer_state.safetensors.
  dist::fsdp::FsdpEngine* fsdp = nullptr;
  // The EMA of the weights (ema_checkpoint.hpp): pretrained_model_ema/ and its training state. Under
  // DDP with ema.on_main_only only rank 0 has one.
  optim::WeightEma* ema = nullptr;
};

struct CheckpointOptions {
  std::filesystem::path output_dir;
  int64_t total_steps = 0;                                 // names are zero-padded to max(6, digits of total_steps)
  int64_t keep_last = 0;                                   // > 0: keep only the newest N complete checkpoints
  nlohmann::json train_config = nlohmann::json::object();  // the resolved recipe config
  std::optional<RecipeSnapshot> recipe;                    // copied into every checkpoint when set
  // The run's layout, recorded in training_step.json.
  int64_t batch_size = 0, grad_accum_steps = 1, dp_replicate = 1, dp_shard = 1;
  // Saves return after the snapshot; a background writer writes the folder (see the top).
  bool async = false;
  // When the training loop saves (is_save_step): every save_freq steps (0: never on a schedule) and
  // at total_steps, unless save_checkpoint is false (the recipe keys of the same names).
  int64_t save_freq = 0;
  bool save_checkpoint = true;
};

class CheckpointManager {
 public:
  // `comm` is null for a single process; otherwise every rank must construct, save and resume in
  // the same order.
  CheckpointManager(CheckpointOptions options, dist::Comm* comm);
  // Joins an asynchronous save still in flight (no collective: this may run on an error path, where
  // a save waiting for another rank's shard is abandoned; its temporary folder is never renamed
  // into place, and the next resume removes it). A writer failure is logged.
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  std::filesystem::path checkpoints_dir() const { return options_.output_dir / kCheckpointsDir; }
  // Writes checkpoints/<step>/ (rank 0), moves `last`, applies keep_last; returns the step folder.
  // Asynchronous: first waits for the save in flight (wait()), then snapshots and returns; the
  // folder appears when the writer has finished.
  std::filesystem::path save(int64_t step, const CheckpointTargets& targets);
  // Waits for the asynchronous save in flight, if any; its failure (the file and the error) is
  // thrown on every rank. Collective when async (every rank calls it); nothing to do otherwise.
  void wait();
  bool async() const { return options_.async; }
  // The one save rule, torchtitan's checkpointer.save(step, last_step) "is it due": `step` is a
  // multiple of save_freq or the last step, and saving is on (CheckpointOptions).
  bool is_save_step(int64_t step) const;
  // The bytes of tensors the last asynchronous save copied into host memory on this rank (what
  // `lrhost show` plans as the checkpoint's host copy); 0 before one.
  int64_t copied_bytes() const { return copied_bytes_; }
  // The peak CPU tensor bytes the last save() allocated on this rank's thread (the gathered model
  // on the writing rank, about one FSDP unit on the others; policy/tensor_bytes_meter.hpp), which
  // every save also logs as save_host_peak_bytes.
  int64_t save_host_peak_bytes() const { return save_host_peak_bytes_; }
  // The checkpoint resume would use (explicit `from`, else the newest sound one), or none. An
  // explicit step folder that is incomplete or damaged is an error; this run's own folder, or an
  // output folder given as `from`, falls back to the newest sound checkpoint (saying so).
  std::optional<std::filesystem::path> find_resume_dir(const std::optional<std::filesystem::path>& from) const;
  // Restores policy weights (strict) and processors, optimizer, scheduler and RNG from a step
  // folder, verifying every file it reads against the checkpoint's checksums as it reads it. Rank 0
  // then removes temporary folders of interrupted saves, moves step folders newer than the one
  // restored aside (they are never deleted: see superseded_dir) and points `last` at it. Every rank
  // must call it with the same folder.
  // When the data of `step_dir` does not match its checksums on any rank (all ranks agree): with
  // `fall_back`, each older sound checkpoint beside it is tried in turn (a warning names the file and
  // byte range); without, a CheckpointDamaged error. Partly restored state is then overwritten
  // entirely by the checkpoint that does restore.
  struct Resumed {
    std::filesystem::path dir;  // the step folder restored
    TrainingStep step;          // its training_step.json
  };
  Resumed resume(const std::filesystem::path& step_dir, const CheckpointTargets& targets, bool fall_back);
  // True when checkpoints/ holds any step folder (a fresh run would overwrite them).
  bool has_checkpoints() const;
  // A fresh run told to overwrite (--overwrite): rank 0 moves every step folder, and the old run's
  // metrics.jsonl and tensorboard/ of the output folder, into superseded_dir and removes `last`, so
  // nothing is deleted. Every rank must call it.
  void set_aside_checkpoints();

 private:
  struct Snapshot;  // everything a save writes, detached from the live model (checkpoint_manager.cpp)
  // Prepares `file`'s tensor `index` for the snapshot: without `copy`, the CPU tensor itself; with it,
  // a host copy the writer may use while training goes on: CUDA tensors into a pinned buffer kept
  // in pinned_ under `key` (queued now), live CPU tensors that only the optimizer step changes
  // (`deferrable`) left to the writer (TensorFile::deferred), other CPU tensors cloned now.
  void take_tensor(TensorFile& file, std::size_t index, const std::string& key, bool copy, bool deferrable);
  // The writer's first task: the copies of the deferred tensors.
  void stage_deferred(Snapshot& snap);
  // Rank 0's part of the snapshot: the temporary step folder with the small files written, and the
  // tensors of model.safetensors and optimizer_state.safetensors. `full_state`: the gathered state
  // dict (FSDP) or null.
  // save() without the wait for the previous save, under save()'s host-memory meter.
  std::filesystem::path save_metered(int64_t step, const CheckpointTargets& targets);
  // `ema_state`: under FSDP, the EMA weights gathered (rank 0), or null.
  void snapshot_checkpoint(Snapshot& snap, const CheckpointTargets& targets,
                           std::vector<std::pair<std::string, torch::Tensor>>* full_state,
                           std::vector<std::pair<std::string, torch::Tensor>>* ema_state, bool copy);
  // The writing: this rank's FSDP shard file and manifest, then (rank 0) the tensor files, the shards
  // folder once complete, checksums.json, the rename, `last` and keep_last.
  void write_shard(Snapshot& snap);
  void write_checkpoint(Snapshot& snap);
  void apply_retention(const std::filesystem::path& keep);
  // Restores from `step_dir` as resume() does; nullopt, or the damage found by the first rank that
  // found its data not matching its checksums (agreed by every rank). Collective.
  std::optional<std::string> restore(const std::filesystem::path& step_dir, const CheckpointTargets& targets,
                                     TrainingStep& record);
  // checkpoint_damage agreed by every rank (a rank that cannot read a file must not choose alone).
  std::optional<std::string> agreed_damage(const std::filesystem::path& step_dir) const;
  // The first rank's `local` finding (nullopt on every rank when no rank has one), with "(found by
  // rank r)" when r is not 0: one all-reduce of the finder, one of its text. Collective.
  std::optional<std::string> agree(const std::optional<std::string>& local) const;
  void set_aside_newer_checkpoints(const std::filesystem::path& resumed);
  // Moves step folders (rank 0) into a new superseded_dir; returns it. `why` goes into the log.
  std::filesystem::path move_aside(const std::vector<std::filesystem::path>& step_dirs, const std::string& why);
  // Runs `body` on rank 0 (or everywhere with `all_ranks`), then one all-reduce: if it failed on any
  // rank, every rank throws (rank 0 its own error).
  void collective(const std::string& what, bool all_ranks, const std::function<void()>& body);

  CheckpointOptions options_;
  dist::Comm* comm_;
  int rank_ = 0, world_size_ = 1;
  // The asynchronous save in flight: its snapshot, writer thread and failure.
  std::unique_ptr<Snapshot> pending_;
  std::thread writer_;
  std::exception_ptr writer_error_;
  std::atomic<bool> abandon_{false};             // set by the destructor: stop waiting for other ranks' shards
  std::map<std::string, torch::Tensor> pinned_;  // CUDA host buffers, reused across saves
  int64_t copied_bytes_ = 0;
  int64_t save_host_peak_bytes_ = 0;
  int64_t deferred_bytes_ = 0;  // of the save in progress: copies left to the writer thread
};

}  // namespace lrhost::ckpt
