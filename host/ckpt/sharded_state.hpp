// Sharded training state of FSDP runs: training_state/fsdp_shards/ holds one safetensors file per
// shard rank (written by the ranks of replica 0; the other replicas hold the same shards) with that
// rank's padded rows of every trainable sharded parameter ("param/<name>") and of its optimizer state
// ("optim/<name>/<key>", e.g. exp_avg, exp_avg_sq, step) and, with an EMA of the weights, its
// shadow's rows ("ema/<name>", fp32; weight_ema.hpp), plus index.json describing the layout:
// group sizes, and per parameter its global shape, dtype, rows per rank, unit and which file holds
// which rows. Frozen units are not in the shard files: they never change, and come back from
// model.safetensors (or, for a LoRA run, from its base). Loading re-slices those rows for the
// current layout, so a run saved on 4 ranks resumes
// on 2 or 3 with the same parameters and optimizer state (exactly: only rows move). Only the files
// whose rows overlap this rank's are read. The functions taking a ShardingView and a ShardLookup
// need no engine and no communication (unit tests simulate ranks with them); the FsdpEngine
// overloads are what checkpoints use. A checkpoint also crosses strategies: FSDP shards load into an
// unsharded model (DDP, one process), and a DDP checkpoint's optimizer state into FSDP shards.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "host/dist/fsdp/fsdp_engine.hpp"
#include "host/optim/optimizer.hpp"
#include "host/optim/weight_ema.hpp"

namespace lrhost::ckpt {

inline constexpr const char* kShardsDir = "fsdp_shards";
inline constexpr const char* kShardIndexFile = "index.json";

// The tensor holding this rank's padded shard of a sharded parameter (shape spec.shard_shape()):
// the module's own parameter, the one the optimizer's state is keyed by; or, for an EMA, the
// shadow of that shard.
using ShardLookup = std::function<torch::Tensor(const std::string& param_name)>;
// An EMA's shadows as a ShardLookup (empty for none).
ShardLookup ema_shard_lookup(const optim::WeightEma* ema);

// "rank_<shard_rank>.safetensors"
std::string shard_file_name(int shard_rank);

// What this rank's shard file holds: its tensors (parameters and, when `optimizer` is given, its
// state, when `ema` is given the shadows; CPU, contiguous; on CPU they may share memory with the
// live ones) and its metadata.
std::vector<std::pair<std::string, torch::Tensor>> rank_shard_tensors(const dist::fsdp::ShardingView& view,
                                                                      const ShardLookup& local_shard,
                                                                      optim::Optimizer* optimizer,
                                                                      const ShardLookup& ema = {});
std::vector<std::pair<std::string, torch::Tensor>> rank_shard_tensors(const dist::fsdp::FsdpEngine& fsdp,
                                                                      optim::Optimizer* optimizer,
                                                                      const optim::WeightEma* ema = nullptr);
std::map<std::string, std::string> rank_shard_metadata(const dist::fsdp::ShardingView& view);
// This rank's shard file (parameters and, when `optimizer` is given, its state), written atomically.
void write_rank_shards(const std::filesystem::path& file, const dist::fsdp::ShardingView& view,
                       const ShardLookup& local_shard, optim::Optimizer* optimizer);
void write_rank_shards(const std::filesystem::path& file, const dist::fsdp::FsdpEngine& fsdp,
                       optim::Optimizer* optimizer);
// index.json's content for this layout; with an optimizer, each parameter also lists the names of
// its optimizer state tensors ("optim": ["step", "exp_avg", ...], the same on every rank), so a
// loader knows what every file it reads must hold; with an EMA, "ema": true.
nlohmann::ordered_json shard_index(const dist::fsdp::ShardingView& view, const ShardLookup& local_shard = {},
                                   optim::Optimizer* optimizer = nullptr, bool ema = false);
nlohmann::ordered_json shard_index(const dist::fsdp::FsdpEngine& fsdp, optim::Optimizer* optimizer,
                                   const optim::WeightEma* ema = nullptr);
// The files a shards folder needs according to its index (empty when the index itself is missing
// or unreadable, which missing_shard_files reports).
std::vector<std::string> missing_shard_files(const std::filesystem::path& shards_dir);

// Whether a unit's parameters are in the shard files: trainable ones only.
bool in_shard_files(const dist::fsdp::UnitLayout& unit);

// Restores this rank's shards of every trainable sharded parameter and, with `optimizer`, their
// optimizer state from `shards_dir`, for the view's (current) layout: parameter values are copied
// into the existing tensors, optimizer state is replaced under the same tensor keys. Frozen
// parameters the files hold (checkpoints written before frozen units were left out) are restored
// too. Returns the names restored; the caller restores the other frozen ones. Everything is read and
// checked before anything changes. DataError naming the file for a missing, truncated or
// inconsistent index or shard file, or a model that does not match.
// With `ema`, the shadows' rows are restored into its tensors too (DataError when the files have none:
// the caller asks shards_hold_ema first).
std::set<std::string> load_rank_shards(const std::filesystem::path& shards_dir, const dist::fsdp::ShardingView& view,
                                       const ShardLookup& local_shard, optim::Optimizer* optimizer,
                                       const ShardLookup& ema = {});
std::set<std::string> load_rank_shards(const std::filesystem::path& shards_dir, dist::fsdp::FsdpEngine& fsdp,
                                       optim::Optimizer* optimizer, const optim::WeightEma* ema = nullptr);
// Whether a shards folder's index says its files hold EMA shadows.
bool shards_hold_ema(const std::filesystem::path& shards_dir);

// An FSDP checkpoint resumed without FSDP (DDP or one process): every sharded parameter of
// `parameters` (name -> the model's own tensor) and its optimizer state are assembled from the rows
// of all shard files, as one rank of a one-rank layout would read them.
void load_shards_unsharded(const std::filesystem::path& shards_dir,
                           const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
                           optim::Optimizer* optimizer, const optim::WeightEma* ema = nullptr);

// A checkpoint written without FSDP resumed under FSDP: the optimizer state of
// optimizer_state.safetensors in `state_dir`, each full tensor cut to this rank's padded shard of its
// parameter (parameters outside every unit keep theirs whole).
void load_full_optimizer_state_sharded(const std::filesystem::path& state_dir, dist::fsdp::FsdpEngine& fsdp,
                                       optim::Optimizer& optimizer);

}  // namespace lrhost::ckpt
