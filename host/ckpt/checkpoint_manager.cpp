// Atomic, rank-safe training checkpoints and their resume; see checkpoint_manager.hpp.
#include "host/ckpt/checkpoint_manager.hpp"

#include <spdlog/spdlog.h>

#include <torch/cuda.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <future>
#include <map>
#include <set>

#include "host/ckpt/adapter_folder.hpp"
#include "host/ckpt/ema_checkpoint.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/ckpt/sharded_state.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/verified_reads.hpp"
#include "host/io/written_checksums.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/tensor_bytes_meter.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"
#include "host/util/timestamp.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;

namespace {

// checksums.json, the last file of a checkpoint: every file of `dir` except the FSDP shard files,
// which their ranks' own manifests cover (named under "manifests").
void write_checkpoint_manifest(const fs::path& dir) {
  const std::string shards = std::string(kTrainingStateDir) + "/" + kShardsDir + "/";
  std::vector<std::string> files, manifests;
  auto all = io::list_files(dir);
  for (const auto& file : all) {
    if (file == kChecksumsFile) continue;
    if (file.rfind(shards, 0) == 0 && file.size() > 12 && file.compare(file.size() - 12, 12, ".safetensors") == 0) {
      const std::string stem = file.substr(shards.size(), file.size() - 12 - shards.size());  // rank_<r>
      const std::string manifest = shards + stem + ".checksums.json";
      if (std::binary_search(all.begin(), all.end(), manifest)) continue;
    }
    if (file.rfind(shards, 0) == 0 && file.size() > 15 && file.compare(file.size() - 15, 15, ".checksums.json") == 0)
      manifests.push_back(file);
    files.push_back(file);
  }
  io::write_checksum_manifest(dir / kChecksumsFile, files, manifests);
}

}  // namespace

CheckpointManager::CheckpointManager(CheckpointOptions options, dist::Comm* comm)
    : options_(std::move(options)), comm_(comm) {
  if (comm_) {
    rank_ = comm_->rank();
    world_size_ = comm_->size();
  }
  if (options_.output_dir.empty()) throw util::ConfigError("checkpoint: the output folder is empty");
  if (options_.keep_last < 0) throw util::ConfigError("checkpoint: keep_last must be >= 0 (0 keeps every checkpoint)");
}

void CheckpointManager::collective(const std::string& what, bool all_ranks, const std::function<void()>& body) {
  std::exception_ptr error;
  if (all_ranks || rank_ == 0) {
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (comm_ && world_size_ > 1) {
    auto failed = torch::full({1}, error ? 1.0 : 0.0, torch::kFloat64);
    comm_->all_reduce(failed, dist::ReduceOp::max);
    if (!error && failed.item<double>() > 0) throw util::Error(what + " failed on another rank (see that rank's log)");
  }
  if (error) std::rethrow_exception(error);
}

// One safetensors file a save writes: where, its tensors (host copies when asynchronous) and metadata.
struct TensorFile {
  fs::path path;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  std::map<std::string, std::string> metadata;
  // Asynchronous saves: indices of `tensors` that are still the live CPU parameters or optimizer
  // state; the writer copies them before anything else (CheckpointManager::stage_deferred).
  std::vector<std::size_t> deferred;
};

struct CheckpointManager::Snapshot {
  int64_t step = 0;
  fs::path step_dir;
  // FSDP ranks of replica 0: this rank's shard file, written into `shards` with its manifest.
  std::optional<TensorFile> shard;
  int shard_rank = 0, shard_size = 0;
  fs::path shards;  // FSDP: the temporary folder of this save's shard files (shared by the ranks)
  // Rank 0: the temporary step folder (small files already in it) and the tensor files still to write.
  std::unique_ptr<io::AtomicDir> staging;
  std::vector<TensorFile> files;
  // Asynchronous saves: set once the writer has copied every deferred tensor; the optimizer's next
  // step waits for it (Optimizer::wait_before_step).
  std::promise<void> staged;
};

namespace {

// Writes a snapshot's tensor file, then drops the tensors: an asynchronous save's host copy is freed
// file by file, as soon as it is on disk.
void write_tensor_file(TensorFile& file) {
  io::write_safetensors(file.path, file.tensors, file.metadata);
  file.tensors.clear();
}

// "rank_<r>.failed": left in the shards folder by a rank whose shard writer failed, with the cause,
// so rank 0's writer stops waiting for that rank's manifest and fails the save with it.
std::string shard_failure_name(int shard_rank) {
  return "rank_" + std::to_string(shard_rank) + ".failed";
}

}  // namespace

void CheckpointManager::take_tensor(TensorFile& file, std::size_t index, const std::string& key, bool copy,
                                    bool deferrable) {
  auto& tensor = file.tensors[index].second;
  if (!copy) {
    tensor = tensor.detach().to(torch::kCPU).contiguous();
    return;
  }
  copied_bytes_ += static_cast<int64_t>(tensor.numel() * tensor.element_size());
  if (tensor.is_cuda()) {
    // Pinned, so the copy is a DMA at full bus speed; reused across saves (the previous save's writer
    // has finished with it: save() waits for it first). Queued on the training stream, so whatever
    // later changes the tensor runs after the copy; the writer waits for the device before writing.
    auto& buffer = pinned_[key];
    if (!buffer.defined() || buffer.sizes() != tensor.sizes() || buffer.dtype() != tensor.dtype())
      buffer = torch::empty(tensor.sizes(), tensor.options().device(torch::kCPU).pinned_memory(true));
    buffer.copy_(tensor.detach(), /*non_blocking=*/true);
    tensor = buffer;
  } else if (deferrable) {
    // A live CPU parameter or optimizer state tensor: only the optimizer step changes it, so the
    // writer copies it while the next forward and backward run, and that step waits for the copy.
    tensor = tensor.detach();
    file.deferred.push_back(index);
    deferred_bytes_ += static_cast<int64_t>(tensor.numel() * tensor.element_size());
  } else {
    // Anything else (a buffer the forward may update): copied now.
    tensor = tensor.detach().contiguous().clone();
  }
}

void CheckpointManager::stage_deferred(Snapshot& snap) {
  auto stage = [](TensorFile& file) {
    for (std::size_t index : file.deferred)
      file.tensors[index].second = file.tensors[index].second.contiguous().clone();
    file.deferred.clear();
  };
  if (snap.shard) stage(*snap.shard);
  for (auto& file : snap.files) stage(file);
}

void CheckpointManager::snapshot_checkpoint(Snapshot& snap, const CheckpointTargets& targets,
                                            std::vector<std::pair<std::string, torch::Tensor>>* full_state,
                                            std::vector<std::pair<std::string, torch::Tensor>>* ema_state, bool copy) {
  if (!targets.policy) throw util::ConfigError("checkpoint: no policy to save");
  std::error_code ec;
  fs::create_directories(snap.step_dir.parent_path(), ec);
  if (ec) throw util::IoError("cannot create " + snap.step_dir.parent_path().string() + ": " + ec.message());
  snap.staging = std::make_unique<io::AtomicDir>(snap.step_dir);
  const fs::path pretrained = snap.staging->path() / kPretrainedDir, state = snap.staging->path() / kTrainingStateDir;
  fs::create_directories(pretrained, ec);
  fs::create_directories(state, ec);
  if (ec) throw util::IoError("cannot create " + state.string() + ": " + ec.message());
  // The tensors: model.safetensors (the gathered state dict under FSDP) and, without FSDP, the
  // optimizer state.
  // An adapted policy saves its adapters alone (adapter_folder.hpp), under FSDP picked from the
  // gathered state.
  const bool adapters = targets.policy->lora_adapters() != nullptr;
  // pretrained_model_ema/'s weights, built before the live state moves into its file.
  std::optional<TensorFile> ema_model;
  if (targets.ema) {
    std::map<std::string, torch::Tensor> values;
    if (ema_state)
      values.insert(ema_state->begin(), ema_state->end());
    else
      values.insert(targets.ema->shadows().begin(), targets.ema->shadows().end());
    ema_model =
        TensorFile{snap.staging->path() / kPretrainedEmaDir / pretrained_weights_file(*targets.policy),
                   ema_policy_state(*targets.policy, full_state ? *full_state : targets.policy->state_dict(), values),
                   {{"format", "pt"}}};
    if (!adapters) targets.policy->adapt_saved_tensors(ema_model->tensors);
    sort_pretrained_state(ema_model->tensors);
  }
  TensorFile model{pretrained / pretrained_weights_file(*targets.policy),
                   full_state && adapters ? adapter_state(*targets.policy, std::move(*full_state))
                   : full_state           ? std::move(*full_state)
                   : adapters             ? adapter_state(*targets.policy)
                                          : targets.policy->state_dict(),
                   {{"format", "pt"}}};
  // model.safetensors in LeRobot's layout (resume reads it back through adapt_pretrained_tensors).
  if (!adapters) targets.policy->adapt_saved_tensors(model.tensors);
  sort_pretrained_state(model.tensors);
  // The gathered FSDP state is already this save's own host copy; otherwise parameters can wait for
  // the writer (only the optimizer step changes them) and buffers are copied now.
  if (full_state && copy) {
    for (const auto& [name, tensor] : model.tensors) copied_bytes_ += static_cast<int64_t>(tensor.nbytes());
  } else if (!full_state) {
    std::set<const torch::TensorImpl*> parameters;
    for (const auto& item : targets.policy->named_parameters()) parameters.insert(item.value().unsafeGetTensorImpl());
    for (std::size_t i = 0; i < model.tensors.size(); ++i)
      take_tensor(model, i, "model/" + model.tensors[i].first, copy,
                  parameters.count(model.tensors[i].second.unsafeGetTensorImpl()) > 0);
  }
  snap.files.push_back(std::move(model));
  if (ema_model) {
    // Gathered (FSDP): host copies already. Otherwise parameters, shadows and the shadows cast to
    // the weights' dtype only change at the next optimizer step, so they may wait for the writer;
    // buffers are copied now.
    std::set<const torch::TensorImpl*> buffers;
    for (const auto& item : targets.policy->named_buffers()) buffers.insert(item.value().unsafeGetTensorImpl());
    for (std::size_t i = 0; i < ema_model->tensors.size(); ++i) {
      if (full_state && copy)
        copied_bytes_ += static_cast<int64_t>(ema_model->tensors[i].second.nbytes());
      else if (!full_state)
        take_tensor(*ema_model, i, "ema_model/" + ema_model->tensors[i].first, copy,
                    buffers.count(ema_model->tensors[i].second.unsafeGetTensorImpl()) == 0);
    }
    snap.files.push_back(std::move(*ema_model));
    fs::create_directories(snap.staging->path() / kPretrainedEmaDir, ec);
    if (ec)
      throw util::IoError("cannot create " + (snap.staging->path() / kPretrainedEmaDir).string() + ": " + ec.message());
    save_pretrained_files(*targets.policy, snap.staging->path() / kPretrainedEmaDir);
    io::write_file_atomic(snap.staging->path() / kPretrainedEmaDir / kTrainConfigFile,
                          nlohmann::ordered_json(options_.train_config).dump(4));
    io::write_file_atomic(state / optim::kEmaStateFile, targets.ema->state_json().dump(2));
    if (!targets.fsdp) {  // under FSDP the shadows are in the shard files
      TensorFile shadows{state / optim::kEmaShadowFile, targets.ema->shadows(), {}};
      for (std::size_t i = 0; i < shadows.tensors.size(); ++i)
        take_tensor(shadows, i, "ema/" + shadows.tensors[i].first, copy, /*deferrable=*/true);
      snap.files.push_back(std::move(shadows));
    }
  }
  if (targets.optimizer && !targets.fsdp) {
    TensorFile optimizer{state / optim::kOptimizerStateFile, optim::optimizer_state_tensors(*targets.optimizer), {}};
    for (std::size_t i = 0; i < optimizer.tensors.size(); ++i)
      take_tensor(optimizer, i, "optimizer/" + optimizer.tensors[i].first, copy, /*deferrable=*/true);
    snap.files.push_back(std::move(optimizer));
  }
  // The small state, written now: it is cheap, and the RNG, scheduler and sampler move on with
  // training.
  save_pretrained_files(*targets.policy, pretrained);
  io::write_file_atomic(pretrained / kTrainConfigFile, nlohmann::ordered_json(options_.train_config).dump(4));
  if (options_.recipe) write_recipe_snapshot(*options_.recipe, pretrained);
  if (targets.optimizer)
    io::write_file_atomic(state / optim::kOptimizerParamGroupsFile,
                          optim::optimizer_param_groups(*targets.optimizer, targets.scheduler != nullptr).dump(4));
  if (targets.fsdp)  // the shards folder was created before the snapshot (save())
    io::write_file_atomic(snap.shards / kShardIndexFile,
                          shard_index(*targets.fsdp, targets.optimizer, targets.ema).dump(2));
  if (targets.scheduler && targets.optimizer)
    optim::save_scheduler_state(*targets.scheduler, *targets.optimizer, state);
  save_rng_state(state);
  TrainingStep record;
  record.step = snap.step;
  record.dp_world_size = world_size_;
  record.batch_size = options_.batch_size;
  record.grad_accum_steps = options_.grad_accum_steps;
  record.dp_replicate = options_.dp_replicate;
  record.dp_shard = options_.dp_shard;
  if (targets.sampler_state) record.sampler = targets.sampler_state();
  save_training_step(record, state);
}

void CheckpointManager::write_shard(Snapshot& snap) {
  if (!snap.shard) return;
  try {
    io::WrittenChecksums written;  // the shard's manifest takes its checksums from the write
    write_tensor_file(*snap.shard);
    // Each rank checksums the shard file it wrote (rank 0's checksums.json names these manifests).
    io::write_checksum_manifest(snap.shards / shard_manifest_name(snap.shard_rank), {shard_file_name(snap.shard_rank)});
  } catch (const std::exception& error) {
    try {
      io::write_file_atomic(snap.shards / shard_failure_name(snap.shard_rank), util::describe(error));
    } catch (const std::exception&) {
      // The cause is still reported on this rank; rank 0 then learns of it at the next wait().
    }
    throw;
  }
}

void CheckpointManager::write_checkpoint(Snapshot& snap) {
  if (!snap.staging) return;
  io::WrittenChecksums written;  // checksums.json takes the tensor files' checksums from their writes
  for (auto& file : snap.files) write_tensor_file(file);
  if (!snap.shards.empty()) {
    // Every shard rank's manifest is the last file it writes, so its presence means the shard is
    // complete. (A synchronous save finds them all at once: the shard writes ran collectively.)
    for (int r = 0; r < snap.shard_size; ++r) {
      while (!path_exists(snap.shards / shard_manifest_name(r))) {
        if (path_exists(snap.shards / shard_failure_name(r)))
          throw util::IoError("checkpoint at step " + std::to_string(snap.step) + ": rank " + std::to_string(r) +
                              "'s shard writer failed: " + io::read_text_file(snap.shards / shard_failure_name(r)));
        if (abandon_) throw util::Error("checkpoint at step " + std::to_string(snap.step) + " abandoned");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    const fs::path state = snap.staging->path() / kTrainingStateDir;
    std::error_code ec;
    fs::rename(snap.shards, state / kShardsDir, ec);
    if (ec)
      throw util::IoError("cannot move " + snap.shards.string() + " into " + state.string() + ": " + ec.message());
  }
  write_checkpoint_manifest(snap.staging->path());
  snap.staging->commit();
  io::replace_symlink(checkpoints_dir() / kLastLink, snap.step_dir.filename());
  apply_retention(snap.step_dir);
  spdlog::info("checkpoint: saved step {} to {}", snap.step, snap.step_dir.string());
}

void CheckpointManager::apply_retention(const fs::path& keep) {
  if (options_.keep_last <= 0) return;
  auto scan = scan_checkpoints(checkpoints_dir(), false);
  auto& complete = scan.complete;
  int64_t excess = static_cast<int64_t>(complete.size()) - options_.keep_last;
  for (const auto& path : complete) {
    if (excess <= 0) break;
    if (path == keep || (scan.last_link && *scan.last_link == path)) continue;
    spdlog::info("checkpoints: removing {} (keep_last = {})", path.string(), options_.keep_last);
    io::remove_tree(path);
    --excess;
  }
}

bool CheckpointManager::is_save_step(int64_t step) const {
  if (!options_.save_checkpoint) return false;
  return (options_.save_freq > 0 && step % options_.save_freq == 0) || step == options_.total_steps;
}

fs::path CheckpointManager::save(int64_t step, const CheckpointTargets& targets) {
  if (step < 0) throw util::ConfigError("checkpoint: step must be >= 0, got " + std::to_string(step));
  wait();  // at most one save in flight; the previous one's failure fails this save
  policy::CpuTensorBytesMeter meter;
  deferred_bytes_ = 0;
  fs::path step_dir = save_metered(step, targets);
  // The writer thread's copies of the live tensors are made outside this thread's meter: counted by size.
  save_host_peak_bytes_ = meter.peak_bytes() + deferred_bytes_;
  spdlog::info(
      "checkpoint: step {} save_host_peak_bytes={} ({} of host tensors allocated by this rank's part of the "
      "save at its peak)",
      step, save_host_peak_bytes_, util::human_bytes(static_cast<std::uintmax_t>(save_host_peak_bytes_)));
  return step_dir;
}

fs::path CheckpointManager::save_metered(int64_t step, const CheckpointTargets& targets) {
  const bool copy = options_.async;
  copied_bytes_ = 0;
  auto snap = std::make_unique<Snapshot>();
  snap->step = step;
  snap->step_dir = checkpoints_dir() / step_identifier(step, options_.total_steps);
  std::vector<std::pair<std::string, torch::Tensor>> full_state, ema_state;
  if (targets.fsdp) {
    if (!targets.policy) throw util::ConfigError("checkpoint: no policy to save");
    // A collective: every rank gathers; only rank 0, which writes model.safetensors, keeps the tensors.
    // A LoRA run gathers only what its adapter file holds: the frozen base's units are not gathered.
    dist::fsdp::StateFilter include;
    if (const auto* adapters = targets.policy->lora_adapters())
      include = [adapters](const std::string& name) { return in_adapter_file(*adapters, name); };
    full_state = targets.fsdp->full_state_dict(/*keep=*/rank_ == 0, include);
    // The EMA weights, gathered the same way with the shadows swapped in (only the tracked groups).
    if (targets.ema) {
      targets.ema->swap_in();
      try {
        ema_state = targets.fsdp->full_state_dict(/*keep=*/rank_ == 0, tracked_by(*targets.ema));
      } catch (...) {
        targets.ema->swap_out();
        throw;
      }
      targets.ema->swap_out();
    }
    // Shard files go to a temporary folder first; rank 0 moves it into the step folder it builds.
    snap->shards =
        checkpoints_dir() / (std::string(io::kTempPrefix) + "fsdp-" + step_identifier(step, options_.total_steps));
    collective("preparing the FSDP shard folder", false, [&] {
      if (path_exists(snap->shards)) io::remove_tree(snap->shards);
      std::error_code ec;
      fs::create_directories(snap->shards, ec);
      if (ec) throw util::IoError("cannot create " + snap->shards.string() + ": " + ec.message());
    });
    const auto& view = targets.fsdp->view();
    snap->shard_rank = view.shard_rank;
    snap->shard_size = view.shard_size;
    if (view.replicate_rank == 0) {
      TensorFile shard{snap->shards / shard_file_name(view.shard_rank),
                       rank_shard_tensors(*targets.fsdp, targets.optimizer, targets.ema), rank_shard_metadata(view)};
      for (std::size_t i = 0; i < shard.tensors.size(); ++i)
        take_tensor(shard, i, "shard/" + shard.tensors[i].first, copy, /*deferrable=*/true);
      snap->shard = std::move(shard);
    }
  }
  if (!options_.async) {
    collective("writing FSDP shards at step " + std::to_string(step), true, [&] { write_shard(*snap); });
    // Gathering the sampler position is local, but must happen on every rank in the same order.
    collective("checkpoint save at step " + std::to_string(step), false, [&] {
      snapshot_checkpoint(*snap, targets, targets.fsdp ? &full_state : nullptr,
                          targets.fsdp && targets.ema ? &ema_state : nullptr, false);
      write_checkpoint(*snap);
    });
    return snap->step_dir;
  }
  collective("checkpoint snapshot at step " + std::to_string(step), false, [&] {
    snapshot_checkpoint(*snap, targets, targets.fsdp ? &full_state : nullptr,
                        targets.fsdp && targets.ema ? &ema_state : nullptr, true);
  });
  spdlog::info(
      "checkpoint: step {} copies {} bytes to host memory ({} of them while the next step's forward and "
      "backward run); writing in the background",
      step, copied_bytes_, deferred_bytes_);
  // The live tensors the writer still copies must not change before it has: the next optimizer step
  // (the first thing that changes them) waits for the copies.
  if (targets.optimizer) targets.optimizer->wait_before_step(snap->staged.get_future().share());
  const bool device_copies = !pinned_.empty();
  pending_ = std::move(snap);
  writer_error_ = nullptr;
  writer_ = std::thread([this, snap = pending_.get(), device_copies] {
    try {
      stage_deferred(*snap);
      snap->staged.set_value();
      if (device_copies) torch::cuda::synchronize();  // the non-blocking copies into pinned buffers are done
      write_shard(*snap);
      write_checkpoint(*snap);
    } catch (...) {
      writer_error_ = std::current_exception();
      try {
        snap->staged.set_value();  // the step goes on; the save's failure is reported by wait()
      } catch (const std::future_error&) {
      }
    }
  });
  return pending_->step_dir;
}

void CheckpointManager::wait() {
  if (!options_.async) return;
  if (writer_.joinable()) writer_.join();
  std::exception_ptr error = writer_error_;
  writer_error_ = nullptr;
  const int64_t step = pending_ ? pending_->step : -1;
  pending_.reset();  // an unfinished temporary folder is removed (AtomicDir), the host copy freed
  collective("the background checkpoint writer" + (step >= 0 ? " at step " + std::to_string(step) : std::string()),
             true, [&] {
               if (error) std::rethrow_exception(error);
             });
}

CheckpointManager::~CheckpointManager() {
  if (!writer_.joinable()) return;
  abandon_ = true;
  writer_.join();
  if (writer_error_) {
    try {
      std::rethrow_exception(writer_error_);
    } catch (const std::exception& error) {
      spdlog::error("checkpoint: the background writer failed: {}", util::describe(error));
    }
  }
}

std::optional<fs::path> CheckpointManager::find_resume_dir(const std::optional<fs::path>& from) const {
  auto damage_check = [this](const fs::path& step_dir) { return agreed_damage(step_dir); };
  if (from) {
    // A step folder names exactly what to resume, so it must be whole; an output or checkpoints
    // folder resolves to its newest sound checkpoint (resolve_checkpoint_dir says when it skips).
    fs::path dir = resolve_checkpoint_dir(*from, damage_check);
    auto missing = missing_checkpoint_files(dir);
    if (!missing.empty())
      throw util::DataError(dir.string() + " is an incomplete checkpoint (missing " + missing.front() + ")",
                            "use an earlier checkpoint");
    if (names_one_checkpoint(*from))
      if (auto damage = damage_check(dir))
        throw util::DataError(dir.string() + " is damaged: " + *damage, "use an earlier checkpoint");
    return dir;
  }
  if (!path_exists(checkpoints_dir())) return std::nullopt;
  return scan_checkpoints(checkpoints_dir(), rank_ == 0, true, damage_check).last_complete;
}

std::optional<std::string> CheckpointManager::agreed_damage(const fs::path& step_dir) const {
  std::optional<std::string> local;
  try {
    local = checkpoint_damage(step_dir);
  } catch (const std::exception& error) {
    local = util::describe(error);
  }
  return agree(local);
}

std::optional<std::string> CheckpointManager::agree(const std::optional<std::string>& local) const {
  if (!comm_ || world_size_ <= 1) return local;
  auto finder = torch::full({1}, static_cast<double>(local ? rank_ : world_size_), torch::kFloat64);
  comm_->all_reduce(finder, dist::ReduceOp::min);
  const int first = static_cast<int>(finder.item<double>());
  if (first >= world_size_) return std::nullopt;
  // The first finding rank's text, as character codes (every other rank adds zeros).
  constexpr int64_t kLength = 1024;
  auto text = torch::zeros({kLength}, torch::kFloat64);
  if (rank_ == first) {
    auto chars = text.accessor<double, 1>();
    for (int64_t i = 0; i < kLength - 1 && i < static_cast<int64_t>(local->size()); ++i)
      chars[i] = static_cast<unsigned char>((*local)[i]);
  }
  comm_->all_reduce(text, dist::ReduceOp::sum);
  std::string agreed;
  auto chars = text.accessor<double, 1>();
  for (int64_t i = 0; i < kLength && chars[i] != 0; ++i)
    agreed.push_back(static_cast<char>(static_cast<int>(chars[i])));
  if (first != 0) agreed += " (found by rank " + std::to_string(first) + ")";
  return agreed;
}

bool CheckpointManager::has_checkpoints() const {
  auto scan = scan_checkpoints(checkpoints_dir(), false);
  return !scan.complete.empty() || !scan.incomplete.empty();
}

fs::path CheckpointManager::move_aside(const std::vector<fs::path>& step_dirs, const std::string& why) {
  const fs::path aside = superseded_dir(checkpoints_dir());
  std::error_code ec;
  fs::create_directories(aside, ec);
  if (ec) throw util::IoError("cannot create " + aside.string() + ": " + ec.message());
  std::string names;
  for (const auto& path : step_dirs) {
    fs::rename(path, aside / path.filename(), ec);
    if (ec) throw util::IoError("cannot move " + path.string() + " aside to " + aside.string() + ": " + ec.message());
    names += (names.empty() ? "" : ", ") + path.filename().string();
  }
  io::fsync_path(checkpoints_dir());
  io::fsync_path(options_.output_dir);
  spdlog::warn("checkpoints: {}; {} moved aside, not deleted, to {}", why, names, aside.string());
  return aside;
}

void CheckpointManager::set_aside_newer_checkpoints(const fs::path& resumed) {
  const int64_t resumed_step = std::stoll(resumed.filename().string());
  auto scan = scan_checkpoints(checkpoints_dir(), false);
  std::vector<fs::path> newer;
  for (const auto* list : {&scan.complete, &scan.incomplete})
    for (const auto& path : *list)
      if (std::stoll(path.filename().string()) > resumed_step) newer.push_back(path);
  if (!newer.empty()) move_aside(newer, "resumed from step " + std::to_string(resumed_step) + ", an older one");
  io::replace_symlink(checkpoints_dir() / kLastLink, resumed.filename());
}

void CheckpointManager::set_aside_checkpoints() {
  collective("moving the old checkpoints aside", false, [&] {
    auto scan = scan_checkpoints(checkpoints_dir(), false);
    std::vector<fs::path> all = scan.complete;
    all.insert(all.end(), scan.incomplete.begin(), scan.incomplete.end());
    // The old run's metrics go with its checkpoints: the new run's sinks would otherwise cut
    // metrics.jsonl back to nothing (first_step 1) and add a second run's event files to tensorboard/.
    for (const char* name : {"metrics.jsonl", "tensorboard"})
      if (path_exists(options_.output_dir / name)) all.push_back(options_.output_dir / name);
    if (!all.empty()) move_aside(all, "a fresh run with --overwrite");
    std::error_code ec;
    fs::remove(checkpoints_dir() / kLastLink, ec);
  });
}

CheckpointManager::Resumed CheckpointManager::resume(const fs::path& requested, const CheckpointTargets& targets,
                                                     bool fall_back) {
  TrainingStep record;
  fs::path step_dir = requested;
  std::map<fs::path, std::string> damaged;  // tried and found damaged, with why
  while (auto damage = restore(step_dir, targets, record)) {
    if (!fall_back)
      throw CheckpointDamaged(step_dir.string() + " is damaged: " + *damage,
                              "resume from an earlier checkpoint, or give the run folder to use its newest sound one");
    damaged.emplace(step_dir, *damage);
    auto scan = scan_checkpoints(step_dir.parent_path(), false, true, [&](const fs::path& candidate) {
      auto it = damaged.find(candidate);
      return it != damaged.end() ? std::optional<std::string>(it->second) : agreed_damage(candidate);
    });
    if (!scan.last_complete)
      throw CheckpointDamaged(
          step_dir.string() + " is damaged (" + *damage + ") and no older sound checkpoint is left in " +
              step_dir.parent_path().string(),
          "`lrhost checkpoint verify " + step_dir.parent_path().string() + "` lists what is damaged");
    if (rank_ == 0)
      spdlog::warn("checkpoints: {} is damaged ({}); resuming from the newest sound checkpoint {} instead",
                   step_dir.string(), *damage, scan.last_complete->string());
    step_dir = *scan.last_complete;
  }
  // Every rank has read what it needs; now the leftovers of interrupted saves can go, and a
  // resume from an older step moves the newer ones out of the way of the saves to come.
  collective("cleaning interrupted checkpoint saves", false, [&] {
    for (const auto& path : scan_checkpoints(checkpoints_dir(), false).temporary) {
      spdlog::warn("checkpoints: removing {}, the leftover of an interrupted save", path.string());
      io::remove_tree(path);
    }
    std::error_code ec;
    if (fs::equivalent(step_dir.parent_path(), checkpoints_dir(), ec) && is_step_name(step_dir.filename().string()))
      set_aside_newer_checkpoints(step_dir);
  });
  spdlog::info("resume: restored step {} from {}", record.step, step_dir.string());
  return {step_dir, record};
}

namespace {

// A checkpoint of another policy type (an ACT run's output_dir given to the pi05 recipe) would
// otherwise fail deep in the key check with every name listed; say what the folder holds and which
// recipe trains it. A config.json that cannot be read is left to the reads that follow.
void check_saved_policy_type(const fs::path& step_dir, const std::string& trained_type) {
  const fs::path config_file = step_dir / kPretrainedDir / kConfigFile;
  if (!path_exists(config_file)) return;
  std::string saved_type;
  try {
    saved_type = policy::read_config_json(step_dir / kPretrainedDir).value("type", std::string());
  } catch (const util::Error&) {
    return;
  }
  if (saved_type.empty() || saved_type == trained_type) return;
  throw util::ConfigError(step_dir.string() + " holds a '" + saved_type + "' policy (" + config_file.string() +
                              "), and this recipe trains '" + trained_type + "': resuming continues the same policy",
                          policy::recipe_that_trains(saved_type) + "; to train '" + trained_type +
                              "', give an output_dir without another policy's checkpoints");
}

}  // namespace

std::optional<std::string> CheckpointManager::restore(const fs::path& step_dir, const CheckpointTargets& targets,
                                                      TrainingStep& record) {
  // Checksum mismatches are collected, not thrown, so that every rank reaches the agreement below
  // (any other error fails the collective on every rank, as before).
  std::optional<std::string> damage;
  collective("resume from " + step_dir.string(), true, [&] {
    try {
      io::VerifiedReads verified(step_dir / kChecksumsFile);
      if (auto missing = missing_lrhost_manifest(step_dir)) {
        damage = *missing;  // as a checksum mismatch: fall back to an older checkpoint
        return;
      }
      const fs::path pretrained = step_dir / kPretrainedDir, state = step_dir / kTrainingStateDir;
      record = load_training_step(state);
      if (targets.policy) check_saved_policy_type(step_dir, targets.policy->type());
      // Any strategy resumes any other: FSDP shards are gathered for DDP / one process, and a DDP
      // checkpoint's full tensors are cut into this rank's shards.
      const bool sharded = path_exists(state / kShardsDir);
      if (sharded != (targets.fsdp != nullptr))
        spdlog::info("resume: {} was written {}; this run {}: {}", step_dir.string(),
                     sharded ? "sharded (FSDP)" : "without FSDP",
                     targets.fsdp ? "shards it with FSDP" : "does not shard",
                     sharded ? "every rank assembles the parameters and optimizer state from all shard files"
                             : "each rank cuts its shards from the full tensors");
      // A LoRA run's base is its pretrained_path, loaded before: its checkpoint holds the adapters.
      const auto* adapters = targets.policy ? targets.policy->lora_adapters() : nullptr;
      // An EMA state comes with the shard files' rows under FSDP, else from ema_shadow.safetensors.
      const bool ema_saved = targets.ema && path_exists(state / optim::kEmaStateFile);
      optim::WeightEma* ema_in_shards = ema_saved && sharded ? targets.ema : nullptr;
      if (targets.fsdp && targets.policy && !sharded) {
        if (adapters)
          targets.fsdp->load_full_state_dict(
              read_adapter_state(*targets.policy, pretrained / kAdapterModelFile),
              [adapters](const std::string& name) { return in_adapter_file(*adapters, name); });
        else {
          auto full = io::read_safetensors(pretrained / kModelFile).tensors;
          targets.policy->adapt_pretrained_tensors(full);
          targets.fsdp->load_full_state_dict(full);
        }
      } else if (targets.fsdp && targets.policy) {
        // Trainable parameters and their optimizer state come from this rank's rows of the shard
        // files; buffers, parameters outside the units and frozen units from model.safetensors (a
        // LoRA run's adapter file holds only the buffers of modules trained in full; its frozen base
        // stays as loaded).
        const auto from_shards = load_rank_shards(state / kShardsDir, *targets.fsdp, targets.optimizer, ema_in_shards);
        const fs::path weights = pretrained / pretrained_weights_file(*targets.policy);
        auto model = io::read_safetensors(weights);
        if (!adapters) targets.policy->adapt_pretrained_tensors(model.tensors);
        const auto& view = targets.fsdp->view();
        torch::NoGradGuard no_grad;
        auto restore_unsharded = [&](const std::string& name, torch::Tensor& tensor) {
          const auto* spec = view.find(name);
          if (spec != nullptr && (from_shards.count(name) || adapters)) return;
          const std::string key = adapters ? kPeftKeyPrefix + name : name;
          if (adapters && model.find(key) == nullptr) return;
          const auto& saved = model.at(key);
          const auto expected = spec ? c10::IntArrayRef(spec->shape) : tensor.sizes();
          if (saved.sizes() != expected)
            throw util::DataError(weights.string() + ": '" + name + "' is " + c10::str(saved.sizes()) +
                                      ", the model has " + c10::str(expected),
                                  "resume with the policy config the checkpoint was written with");
          if (spec)  // a frozen unit's parameter: this rank's rows
            targets.fsdp->local_shard(name).detach().copy_(
                dist::fsdp::shard_of(*spec, saved.to(spec->dtype), view.shard_rank));
          else
            tensor.detach().copy_(saved);
        };
        for (auto& item : targets.policy->named_parameters()) restore_unsharded(item.key(), item.value());
        for (auto& item : targets.policy->named_buffers()) restore_unsharded(item.key(), item.value());
      } else if (targets.policy) {
        if (adapters)
          load_adapter_state(*targets.policy, pretrained / kAdapterModelFile);
        else
          load_state_dict(*targets.policy, pretrained / kModelFile, true);
        if (sharded) {
          std::vector<std::pair<std::string, torch::Tensor>> parameters;
          for (const auto& item : targets.policy->named_parameters()) parameters.emplace_back(item.key(), item.value());
          load_shards_unsharded(state / kShardsDir, parameters, targets.optimizer, ema_in_shards);
        }
      }
      // LeRobot resumes with the checkpoint's statistics, not the dataset's (its issue #4006).
      if (targets.policy && policy::PolicyProcessors::present(pretrained))
        targets.policy->set_processors(
            std::make_shared<policy::PolicyProcessors>(policy::PolicyProcessors::load(pretrained)));
      if (targets.optimizer && sharded)  // the per-parameter state came with the shards
        optim::load_optimizer_param_groups(*targets.optimizer, state);
      else if (targets.optimizer && targets.fsdp)
        load_full_optimizer_state_sharded(state, *targets.fsdp, *targets.optimizer);
      else if (targets.optimizer)
        optim::load_optimizer_state(*targets.optimizer, state);
      if (targets.scheduler && targets.optimizer)
        optim::load_scheduler_state(*targets.scheduler, *targets.optimizer, state);
      if (ema_saved) {
        if (!sharded) load_ema_shadow_file(state, *targets.ema, targets.fsdp);
        targets.ema->load_step(io::read_json_file(state / optim::kEmaStateFile, ""),
                               (state / optim::kEmaStateFile).string());
      } else if (targets.ema) {
        // LeRobot main does the same when its ema_state.pt is missing.
        spdlog::warn("resume: {} has no EMA state ({}); the EMA restarts from the restored weights", step_dir.string(),
                     optim::kEmaStateFile);
        targets.ema->reset_to_parameters();
      }
      load_rng_state(state);
      // Logged here, inside the reading scope, where its figures are known.
      if (!verified.has_manifest())
        spdlog::warn("resume: {} has no {} (a LeRobot checkpoint?): its data is unverified", step_dir.string(),
                     kChecksumsFile);
      else
        spdlog::info("resume: verified {} file(s), {} against {} as they were read ({:.2f} s of CRC32C)",
                     verified.files_verified(), util::human_bytes(verified.bytes_verified()), kChecksumsFile,
                     verified.seconds());
      if (record.dp_world_size != world_size_ || (options_.batch_size > 0 && record.batch_size != options_.batch_size))
        spdlog::warn(
            "resume: the checkpoint was written with {} rank(s) x batch_size {}, this run has {} x {}; the "
            "run continues but is not sample-exact",
            record.dp_world_size, record.batch_size, world_size_, options_.batch_size);
      if (record.grad_accum_steps != options_.grad_accum_steps)
        spdlog::warn("resume: gradient accumulation changed from {} to {} steps", record.grad_accum_steps,
                     options_.grad_accum_steps);
    } catch (const io::ChecksumError& error) {
      damage = util::describe(error);
    }
  });
  return agree(damage);
}

}  // namespace lrhost::ckpt
