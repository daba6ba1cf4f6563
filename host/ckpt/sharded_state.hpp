// Sharded training state of FSDP runs: training_state/fsdp_shards/ holds one safetensors file per
// shard rank (written by the ranks of replica 0; the other replicas hold the same shards) with that
// rank's padded rows of every sharded parameter ("param/<name>") and of its optimizer state
// ("optim/<name>/<key>", e.g. exp_avg, exp_avg_sq, step), plus index.json describing the layout:
// group sizes, and per parameter its global shape, dtype, rows per rank, unit and which file holds
// which rows. Loading re-slices those rows for the current layout, so a run saved on 4 ranks resumes
// on 2 or 3 with the same parameters and optimizer state (exactly: only rows move). Only the files
// whose rows overlap this rank's are read.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>

#include "host/dist/fsdp/fsdp_engine.hpp"
#include "host/optim/optimizer.hpp"

namespace lrhost::ckpt {

inline constexpr const char* kShardsDir = "fsdp_shards";
inline constexpr const char* kShardIndexFile = "index.json";

// "rank_<shard_rank>.safetensors"
std::string shard_file_name(int shard_rank);

// This rank's shard file (parameters and, when `optimizer` is given, its state).
void write_rank_shards(const std::filesystem::path& file, const dist::fsdp::FsdpEngine& fsdp,
                       optim::Optimizer* optimizer);
// index.json's content for this layout.
nlohmann::ordered_json shard_index(const dist::fsdp::ShardingView& view);
// The files a shards folder needs according to its index (empty when the index itself is missing
// or unreadable, which missing_shard_files reports).
std::vector<std::string> missing_shard_files(const std::filesystem::path& shards_dir);

// Restores this rank's shards of every sharded parameter and, with `optimizer`, their optimizer
// state from `shards_dir`, for the engine's current layout. DataError / IoError naming the file for a
// missing, truncated or inconsistent index or shard file, or a model that does not match.
void load_rank_shards(const std::filesystem::path& shards_dir, dist::fsdp::FsdpEngine& fsdp,
                      optim::Optimizer* optimizer);

}  // namespace lrhost::ckpt
