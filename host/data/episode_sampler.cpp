// Episode-aware sampling and accelerate-style sharding; see episode_sampler.hpp.
#include "host/data/episode_sampler.hpp"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>

#include "host/data/seed_sequence.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {

EpisodeSampler::EpisodeSampler(const std::vector<std::pair<int64_t, int64_t>>& episode_ranges, SamplerOptions options,
                               SamplingGroups groups)
    : options_(options), group_weights_(std::move(groups.group_weights)) {
  if (options_.batch_size < 1)
    throw util::ConfigError("batch_size must be >= 1, got " + std::to_string(options_.batch_size));
  if (options_.drop_first < 0 || options_.drop_last < 0)
    throw util::ConfigError("drop_n_first_frames and drop_n_last_frames must be >= 0");
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw util::ConfigError("sampler rank " + std::to_string(options_.rank) + " is outside world size " +
                            std::to_string(options_.world_size));
  const bool weighted = !group_weights_.empty();
  if (!groups.group_episodes.empty() || weighted) {
    int64_t grouped = 0;
    for (int64_t n : groups.group_episodes) {
      const auto first = static_cast<std::size_t>(std::min<int64_t>(grouped, std::ssize(episode_ranges) - 1));
      group_first_row_.push_back(episode_ranges.empty() ? 0 : episode_ranges[first].first);
      grouped += n;
    }
    if ((weighted && groups.group_episodes.size() != group_weights_.size()) ||
        grouped != static_cast<int64_t>(episode_ranges.size()))
      throw util::Error("sampler: the mixture's groups (" + std::to_string(grouped) + " episodes) do not cover its " +
                        std::to_string(episode_ranges.size()) + " episodes");
  }
  for (double w : group_weights_)
    if (!(w > 0)) throw util::ConfigError("sampler: every mixture weight must be > 0");
  std::size_t group = 0;
  int64_t episodes_left_in_group = weighted ? groups.group_episodes[0] : 0;
  if (weighted) group_positions_.emplace_back(0, 0);
  for (std::size_t episode = 0; episode < episode_ranges.size(); ++episode) {
    if (weighted) {
      while (episodes_left_in_group == 0) {
        episodes_left_in_group = groups.group_episodes[++group];
        group_positions_.emplace_back(num_samples_, num_samples_);
      }
      --episodes_left_in_group;
    }
    auto [from, to] = episode_ranges[episode];
    int64_t start = from + options_.drop_first;
    int64_t length = to - options_.drop_last - start;
    if (length <= 0) {
      spdlog::warn("episode {} has {} frames and dropping {} first / {} last frames removes all of them; skipping it",
                   episode, to - from, options_.drop_first, options_.drop_last);
      continue;
    }
    starts_.push_back(start);
    num_samples_ += length;
    cum_lengths_.push_back(num_samples_);
    if (weighted) group_positions_.back().second = num_samples_;
  }
  while (weighted && group_positions_.size() < group_weights_.size())
    group_positions_.emplace_back(num_samples_, num_samples_);
  for (std::size_t g = 0; g < group_positions_.size(); ++g)
    if (group_positions_[g].first == group_positions_[g].second)
      throw util::ConfigError("mixture dataset " + std::to_string(g + 1) +
                              " has no frames left to sample (after "
                              "dropping " +
                              std::to_string(options_.drop_first) + " first and " + std::to_string(options_.drop_last) +
                              " last frames of each episode)");
  if (num_samples_ == 0)
    throw util::ConfigError("no frames remain after dropping " + std::to_string(options_.drop_first) + " first and " +
                            std::to_string(options_.drop_last) + " last frames of every episode");
}

int64_t EpisodeSampler::row_at(int64_t position) const {
  // searchsorted(cum_lengths, position, side="right")
  auto episode = std::upper_bound(cum_lengths_.begin(), cum_lengths_.end(), position) - cum_lengths_.begin();
  int64_t before = episode > 0 ? cum_lengths_[episode - 1] : 0;
  return starts_[episode] + (position - before);
}

std::vector<int64_t> EpisodeSampler::epoch_order(int64_t epoch) const {
  std::vector<int64_t> order(num_samples_);
  if (!options_.shuffle) {
    for (int64_t k = 0; k < num_samples_; ++k) order[k] = row_at(k);
    return order;
  }
  if (!group_weights_.empty()) {
    std::vector<int64_t> positions = weighted_positions(epoch);
    for (int64_t k = 0; k < num_samples_; ++k) order[k] = row_at(positions[k]);
    return order;
  }
  uint64_t epoch_seed = seed_sequence_uint64({options_.seed, static_cast<uint64_t>(epoch)});
  auto generator = at::detail::createCPUGenerator(epoch_seed);
  torch::Tensor permutation = torch::randperm(num_samples_, generator, torch::kLong);
  const int64_t* data = permutation.data_ptr<int64_t>();
  for (int64_t k = 0; k < num_samples_; ++k) order[k] = row_at(data[k]);
  return order;
}

std::vector<int64_t> EpisodeSampler::weighted_positions(int64_t epoch) const {
  const auto e = static_cast<uint64_t>(epoch);
  auto choice_generator = at::detail::createCPUGenerator(seed_sequence_uint64({options_.seed, e, 1}));
  torch::Tensor weights = torch::tensor(group_weights_, torch::kDouble);
  torch::Tensor choices = torch::multinomial(weights, num_samples_, /*replacement=*/true, choice_generator);
  const int64_t* group_of_draw = choices.data_ptr<int64_t>();
  // Each group's rows in the order its draws take them: its permutations, one per pass, end to end.
  const std::size_t groups = group_weights_.size();
  std::vector<int64_t> draws(groups, 0);
  for (int64_t k = 0; k < num_samples_; ++k) ++draws[static_cast<std::size_t>(group_of_draw[k])];
  std::vector<std::vector<int64_t>> stream(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    const auto [begin, end] = group_positions_[g];
    const int64_t n = end - begin;
    for (int64_t pass = 0; static_cast<int64_t>(stream[g].size()) < draws[g]; ++pass) {
      auto generator = at::detail::createCPUGenerator(
          seed_sequence_uint64({options_.seed, e, 2, static_cast<uint64_t>(g), static_cast<uint64_t>(pass)}));
      torch::Tensor permutation = torch::randperm(n, generator, torch::kLong);
      const int64_t* data = permutation.data_ptr<int64_t>();
      for (int64_t k = 0; k < n; ++k) stream[g].push_back(begin + data[k]);
    }
  }
  std::vector<int64_t> positions(num_samples_);
  std::vector<std::size_t> taken(groups, 0);
  for (int64_t k = 0; k < num_samples_; ++k) {
    const auto g = static_cast<std::size_t>(group_of_draw[k]);
    positions[k] = stream[g][taken[g]++];
  }
  return positions;
}

std::vector<std::vector<int64_t>> EpisodeSampler::rank_batches(int64_t epoch, int64_t start_index) const {
  std::vector<int64_t> order = epoch_order(epoch);
  start_index = std::clamp<int64_t>(start_index, 0, num_samples_);
  const auto B = static_cast<std::size_t>(options_.batch_size);
  const int W = options_.world_size, rank = options_.rank;
  std::vector<std::vector<int64_t>> batches;  // torch BatchSampler(drop_last=False) over the stream
  for (std::size_t k = static_cast<std::size_t>(start_index); k < order.size(); k += B)
    batches.emplace_back(order.begin() + k, order.begin() + std::min(order.size(), k + B));
  if (W == 1) return batches;  // accelerate does not shard a single process: the last batch may be short

  // accelerate BatchSamplerShard._iter_with_no_split with even_batches=True, drop_last=False.
  std::vector<std::vector<int64_t>> mine;
  std::vector<int64_t> initial;
  std::vector<int64_t> to_yield;
  std::size_t idx = 0;
  for (; idx < batches.size(); ++idx) {
    const auto& batch = batches[idx];
    if (static_cast<int>(idx % W) == rank) to_yield = batch;
    if (static_cast<int>(idx % W) == W - 1 && batch.size() == B) {
      mine.push_back(to_yield);
      to_yield.clear();
    }
  }
  if (batches.empty()) return mine;
  // accelerate pads with the first W batches of the stream it was given, which after a resume are
  // not the epoch's first samples; taking them from the epoch order itself keeps a resumed run
  // sample-exact (identical to accelerate when the epoch starts at 0).
  initial.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), W * B)));
  if (to_yield.size() == B) mine.push_back(to_yield);
  while (initial.size() < static_cast<std::size_t>(W) * B) {
    std::vector<int64_t> copy = initial;
    initial.insert(initial.end(), copy.begin(), copy.end());
  }
  std::vector<int64_t> batch = batches.back();
  idx = batches.size() - 1;
  if (batch.size() == B) {
    batch.clear();
    ++idx;
  }
  std::size_t cycle = 0;
  while (idx % W != 0 || !batch.empty()) {
    std::size_t end = cycle + B - batch.size();
    batch.insert(batch.end(), initial.begin() + cycle, initial.begin() + end);
    if (static_cast<int>(idx % W) == rank) mine.push_back(batch);
    cycle = end;
    batch.clear();
    ++idx;
  }
  return mine;
}

int64_t EpisodeSampler::batches_per_epoch() const {
  int64_t batches = (num_samples_ + options_.batch_size - 1) / options_.batch_size;
  return (batches + options_.world_size - 1) / options_.world_size;
}

SamplerPosition EpisodeSampler::advance(SamplerPosition from, int64_t batches) const {
  const int64_t per_step = options_.batch_size * options_.world_size;
  SamplerPosition position = from;
  while (batches > 0) {
    int64_t remaining_positions = num_samples_ - position.start_index;
    int64_t steps_left_in_epoch = (remaining_positions + per_step - 1) / per_step;
    if (batches < steps_left_in_epoch) {
      position.start_index += batches * per_step;
      return position;
    }
    batches -= steps_left_in_epoch;
    position = {position.epoch + 1, 0};
  }
  return position;
}

std::size_t EpisodeSampler::group_of_row(int64_t row) const {
  auto after = std::upper_bound(group_first_row_.begin(), group_first_row_.end(), row) - group_first_row_.begin();
  return static_cast<std::size_t>(std::max<std::ptrdiff_t>(after - 1, 0));
}

std::vector<int64_t> EpisodeSampler::group_counts_until(SamplerPosition position) const {
  std::vector<int64_t> counts(num_groups(), 0);
  const int64_t per_step = options_.batch_size * options_.world_size;
  for (int64_t epoch = 0; epoch <= position.epoch; ++epoch) {
    if (epoch == position.epoch && position.start_index == 0) break;
    auto batches = rank_batches(epoch, 0);
    auto taken = static_cast<int64_t>(batches.size());
    if (epoch == position.epoch) taken = std::min(taken, (position.start_index + per_step - 1) / per_step);
    for (int64_t b = 0; b < taken; ++b)
      for (int64_t row : batches[static_cast<std::size_t>(b)]) ++counts[group_of_row(row)];
  }
  return counts;
}

SamplerPosition EpisodeSampler::position_for_step(int64_t step, int64_t num_samples, int64_t batch_size,
                                                  int world_size) {
  int64_t batches = (num_samples + batch_size - 1) / batch_size;
  int64_t per_epoch = (batches + world_size - 1) / world_size;
  return {step / per_epoch, std::min((step % per_epoch) * batch_size * world_size, num_samples)};
}

}  // namespace lrhost::data
