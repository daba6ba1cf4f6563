// LeRobot's EpisodeAwareSampler plus accelerate's batch sharding, in one deterministic object.
// Frames come from per-episode ranges minus drop_first/drop_last frames; each epoch's order is
// torch.randperm seeded with numpy SeedSequence([seed, epoch]) (identical on every rank); the
// epoch's sample stream is cut into batches and batch k goes to data-parallel rank k mod W, with
// accelerate's even_batches padding from the epoch's first samples when W > 1. A position
// (epoch, start_index) resumes sample-exactly. Semantics: shared/reference/lerobot.md section 2.4.
// A weighted mixture (SamplingGroups with weights) keeps everything but the epoch's order: an epoch
// is still N draws, each picking a dataset by weight (multinomial, seeded by [seed, epoch, 1]) and
// taking that dataset's next row from its own permutations (one per pass over it, seeded by [seed,
// epoch, 2, dataset, pass]), so the order is a function of (seed, epoch) alone: identical on every
// rank, split between them as above, and resumable at any position.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "host/data/frame_source.hpp"

namespace lrhost::data {

struct SamplerOptions {
  int64_t batch_size = 1;
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t drop_first = 0, drop_last = 0;
  int rank = 0, world_size = 1;
};

// LeRobot's sampler state_dict: the epoch and how many positions of its order were consumed.
struct SamplerPosition {
  int64_t epoch = 0;
  int64_t start_index = 0;
  bool operator==(const SamplerPosition&) const = default;
};

class EpisodeSampler {
 public:
  // episode_ranges: half-open [from, to) dataset rows of each episode.
  // groups: the mixture's datasets and weights (docs in frame_source.hpp); empty: uniform.
  EpisodeSampler(const std::vector<std::pair<int64_t, int64_t>>& episode_ranges, SamplerOptions options,
                 SamplingGroups groups = {});

  const SamplerOptions& options() const { return options_; }
  int64_t num_samples() const { return num_samples_; }
  // The epoch's order of dataset rows (all of them, before sharding).
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  // This rank's batches of the epoch, starting at position start_index of the epoch's order.
  std::vector<std::vector<int64_t>> rank_batches(int64_t epoch, int64_t start_index) const;
  // Batches each rank gets in a full epoch: ceil(ceil(N / B) / W) (W = 1: ceil(N / B)).
  int64_t batches_per_epoch() const;
  // Position after `batches` more steps from `from` (each step consumes B * W positions).
  SamplerPosition advance(SamplerPosition from, int64_t batches) const;
  // LeRobot's compute_sampler_state(step, N, B, W).
  static SamplerPosition position_for_step(int64_t step, int64_t num_samples, int64_t batch_size, int world_size);
  // The group (a mixture's dataset; 0 without groups) of a dataset row.
  std::size_t group_of_row(int64_t row) const;
  // Samples per group this rank is handed from epoch 0, position 0 up to `position` (a resumed run's
  // start: the stream is a function of the seed). One rank_batches per epoch before it.
  std::vector<int64_t> group_counts_until(SamplerPosition position) const;
  std::size_t num_groups() const { return group_first_row_.empty() ? 1 : group_first_row_.size(); }
  bool grouped() const { return !group_first_row_.empty(); }  // a mixture's rows

 private:
  int64_t row_at(int64_t position) const;
  std::vector<int64_t> weighted_positions(int64_t epoch) const;

  SamplerOptions options_;
  std::vector<int64_t> starts_;       // first usable row of each kept episode
  std::vector<int64_t> cum_lengths_;  // cumulative usable lengths
  int64_t num_samples_ = 0;
  // Weighted mixtures: each group's [begin, end) positions and its weight (empty: uniform).
  std::vector<std::pair<int64_t, int64_t>> group_positions_;
  std::vector<double> group_weights_;
  std::vector<int64_t> group_first_row_;  // each group's first row (empty: one group)
};

}  // namespace lrhost::data
