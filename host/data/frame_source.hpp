// What the data loader and the policies read from a training dataset, whether it is one LeRobot
// dataset (LeRobotDataset) or a mixture of several (MixtureDataset): the metadata the policy is built
// from (features, stats, tasks), the selected episodes in row order, items by row, and how the
// sampler should draw rows. Implementations are immutable after construction and shared by the
// loader's worker threads; decoding state lives in the caller's ReadContext.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host/data/dataset_meta.hpp"
#include "host/data/delta_windows.hpp"

namespace lrhost::data {

class ReadContext;

// One item: every numeric column and camera of the dataset (text features are left out; the task
// is available through task_index and DatasetMeta::task).
using Sample = std::map<std::string, torch::Tensor>;

// The rows' groups (a mixture's datasets: `group_episodes[g]` episodes each, in episode order; empty
// for one dataset) and how the sampler draws the rows of an epoch: with empty `group_weights`, one
// uniform permutation of all rows (LeRobot's sampler; for a mixture, the frame-proportional
// concatenation LeRobot's merge gives), otherwise each draw picks group g with probability
// group_weights[g] / sum.
struct SamplingGroups {
  std::vector<int64_t> group_episodes;
  std::vector<double> group_weights;
};

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  virtual const DatasetMeta& meta() const = 0;
  virtual int64_t size() const = 0;                                 // rows of the selected episodes
  virtual const std::vector<int64_t>& episode_indices() const = 0;  // selected, in row order
  virtual const DeltaIndices& delta_indices() const = 0;
  // Item i (0 <= i < size(), in selected-episode order); DataError naming the index when out of range.
  virtual Sample get(int64_t i, ReadContext& context) const = 0;
  // A numeric column over all rows ([size(), ...]), e.g. "action" for baselines and tests.
  virtual const torch::Tensor& column(const std::string& key) const = 0;
  virtual SamplingGroups sampling_groups() const { return {}; }
  // How many values a frame's `index` can take (it is in [0, count)), and a name for the frames it
  // indexes: what a policy's per-frame cache is keyed by. One dataset: its frames and its root.
  virtual int64_t frame_index_count() const { return meta().info.total_frames; }
  virtual std::string identity() const { return meta().root.string(); }
  // Video streams a shuffled epoch reads from (its video cameras; a mixture's, of every member): the
  // loader's default number of open video files per worker is at least this.
  virtual std::size_t video_streams() const { return meta().info.keys_of(FeatureKind::Video).size(); }
};

}  // namespace lrhost::data
