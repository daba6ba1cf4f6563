// Several LeRobot datasets trained on as one (dataset.mixture): each dataset's keys renamed onto the
// policy's (its rename_map), their episodes numbered one after another and their frames indexed as
// LeRobot's merge (lerobot-edit-dataset --operation.type=merge) numbers them, one task table, and the
// pooled statistics LeRobot's aggregate_stats gives. Differences between the datasets that a policy
// can take are made uniform per sample so that batches collate:
//  - a camera some datasets lack is served as black frames with `<camera>_padding_mask` = false (the
//    VLAs feed such a camera as an empty one for that sample; other policies refuse the mixture);
//  - a 1-D feature (state, action) narrower in some datasets is zero-padded to the widest, with
//    `<key>_dim_is_pad` (bool [width]) saying which dimensions are padding, so that they stay 0 after
//    normalization and add no loss (padded_dimensions.hpp);
//  - a numeric feature not in every dataset is left out (LeRobot's MultiLeRobotDataset keeps the
//    intersection), and said once in the log.
// With stats = per_dataset each sample also carries `dataset_index` (its dataset's place in the
// mixture), and meta().per_dataset_stats each dataset's stats, for the normalizer to pick per sample.
// Rows are in mixture episode order; sampling_groups() carries the weights to the sampler.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "host/data/frame_source.hpp"
#include "host/data/lerobot_dataset.hpp"
#include "host/data/mixture/mixture_spec.hpp"

namespace lrhost::data {

// One dataset of the mixture as the mixture uses it.
struct MixtureMember {
  MixturePart part;
  std::shared_ptr<const LeRobotDataset> dataset;  // its selected episodes; null when none is selected
  std::vector<int64_t> episodes;  // its episodes in use (part.episodes, or all), ascending, in its numbering
  int64_t first_episode = 0;      // the first of them in the mixture's numbering
  int64_t num_frames = 0;         // frames of those episodes
  int64_t index_offset = 0;       // added to its `index` column: the frames of the datasets before it
  int64_t first_row = 0;          // its first row among the mixture's selected rows
  double share = 0;               // the fraction of draws it gets
  std::map<std::string, std::string> to_dataset_key;  // policy key -> its key (rename_map inverted)
  std::vector<int64_t> task_index;                    // its task_index -> the mixture's
  std::set<std::string> missing_cameras;              // mixture cameras it lacks
};

class MixtureDataset final : public FrameSource {
 public:
  // options: delta_timestamps and keys in the policy's names, episodes in the mixture's numbering.
  MixtureDataset(MixtureSpec spec, DatasetOptions options = {});
  ~MixtureDataset() override;

  const DatasetMeta& meta() const override { return meta_; }
  int64_t size() const override { return num_rows_; }
  const std::vector<int64_t>& episode_indices() const override { return episodes_; }
  const DeltaIndices& delta_indices() const override { return delta_indices_; }
  Sample get(int64_t i, ReadContext& context) const override;
  const torch::Tensor& column(const std::string& key) const override;
  SamplingGroups sampling_groups() const override;
  // Indices run over every member's frames (index_offset + its own), episodes in use or not; the
  // identity names every member in order, so a cache of another mixture is never taken for this one.
  int64_t frame_index_count() const override;
  std::string identity() const override;
  std::size_t video_streams() const override;

  const MixtureSpec& spec() const { return spec_; }
  const std::vector<MixtureMember>& members() const { return members_; }
  // The member whose rows hold row i.
  const MixtureMember& member_of_row(int64_t i) const;
  // Per member (in order): the sum of `values` [B] over the samples whose frame `index` [B] is its,
  // and their count; float64 [members] each, on the values' device. For per-dataset means of a batch's
  // per-sample figures.
  std::pair<torch::Tensor, torch::Tensor> sum_by_member(const torch::Tensor& index, const torch::Tensor& values) const;
  // Cameras some member lacks, and 1-D features padded for some member (key -> the widest width).
  const std::set<std::string>& partial_cameras() const { return partial_cameras_; }
  const std::map<std::string, int64_t>& padded_features() const { return padded_features_; }

 private:
  void build_features();
  void build_tables();
  void build_per_dataset_stats(const DatasetStats& pooled);
  void open_members(const DatasetOptions& options);

  MixtureSpec spec_;
  std::vector<MixtureMember> members_;
  std::vector<DatasetMeta> member_meta_;
  DatasetMeta meta_;
  DeltaIndices delta_indices_;
  std::vector<int64_t> episodes_;  // selected, in the mixture's numbering
  int64_t num_rows_ = 0;
  std::set<std::string> partial_cameras_;
  std::map<std::string, int64_t> padded_features_;
  std::map<std::string, std::vector<int64_t>> member_width_;  // padded feature -> each member's width
  mutable std::mutex columns_mutex_;
  mutable std::map<std::string, torch::Tensor> columns_;
};

}  // namespace lrhost::data
