// Opening a mixture's datasets as one; see mixture_dataset.hpp.
#include "host/data/mixture/mixture_dataset.hpp"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>

#include "host/data/mixture/padded_dimensions.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace {

const std::string kIsPad = "_is_pad";

std::string describe(const MixturePart& part) {
  return "dataset.mixture '" + part.name + "' (" + part.source + ")";
}

std::string feature_shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The policy's name of a dataset key.
std::string renamed(const MixturePart& part, const std::string& key) {
  auto found = part.rename_map.find(key);
  return found == part.rename_map.end() ? key : found->second;
}

bool is_default_key(const std::string& key) {
  const auto& defaults = default_feature_keys();
  return std::find(defaults.begin(), defaults.end(), key) != defaults.end();
}

// A member's episode in the mixture's numbering.
int64_t mixture_episode(const MixtureMember& member, int64_t own) {
  auto found = std::lower_bound(member.episodes.begin(), member.episodes.end(), own);
  return member.first_episode + (found - member.episodes.begin());
}

}  // namespace

MixtureDataset::~MixtureDataset() = default;

MixtureDataset::MixtureDataset(MixtureSpec spec, DatasetOptions options) : spec_(std::move(spec)) {
  if (options.tolerance_s < 0) throw util::ConfigError("tolerance_s must be >= 0");
  int64_t index_offset = 0, first_episode = 0;
  for (const MixturePart& part : spec_.parts) {
    DatasetMeta meta = DatasetMeta::read(part.root);
    MixtureMember member{part};
    for (const auto& [from, to] : part.rename_map) {
      if (!meta.info.find_feature(from)) {
        std::string features;
        for (const FeatureSpec& f : meta.info.features) features += (features.empty() ? "" : ", ") + f.key;
        throw util::ConfigError(describe(part) + ": rename_map names '" + from + "', which is not one of its features",
                                "its features: " + features);
      }
    }
    for (const FeatureSpec& feature : meta.info.features) {
      const std::string key = renamed(part, feature.key);
      if (!member.to_dataset_key.emplace(key, feature.key).second)
        throw util::ConfigError(describe(part) + ": rename_map maps two of its features onto '" + key + "'");
    }
    if (part.episodes) {
      std::set<int64_t> unique(part.episodes->begin(), part.episodes->end());
      for (int64_t e : unique) {
        if (e >= static_cast<int64_t>(meta.episodes.size()))
          throw util::ConfigError(describe(part) + ": episodes lists " + std::to_string(e) + ", outside its " +
                                  std::to_string(meta.episodes.size()) + " episodes");
      }
      member.episodes.assign(unique.begin(), unique.end());
    } else {
      for (const Episode& episode : meta.episodes) member.episodes.push_back(episode.index);
    }
    member.first_episode = first_episode;
    for (int64_t e : member.episodes) member.num_frames += meta.episode(e).length;
    member.index_offset = index_offset;
    first_episode += static_cast<int64_t>(member.episodes.size());
    index_offset += meta.info.total_frames;
    members_.push_back(std::move(member));
    member_meta_.push_back(std::move(meta));
  }
  build_features();
  build_tables();
  delta_indices_ = resolve_delta_timestamps(options.delta_timestamps, meta_.info, options.tolerance_s);
  open_members(options);
}

void MixtureDataset::build_features() {
  const DatasetInfo& first = member_meta_.front().info;
  std::vector<FeatureSpec> features;
  std::map<std::string, std::size_t> holders;  // key -> members having it
  std::map<std::string, std::string> first_holder;
  for (std::size_t m = 0; m < members_.size(); ++m) {
    const MixturePart& part = members_[m].part;
    const DatasetInfo& info = member_meta_[m].info;
    if (info.fps != first.fps && !spec_.mixed_fps)
      throw util::ConfigError(describe(part) + " records at " + std::to_string(info.fps) + " fps and " +
                                  describe(members_.front().part) + " at " + std::to_string(first.fps) + " fps",
                              "set dataset.mixed_fps=true to serve the policy's windows in seconds from each "
                              "dataset (every window offset must then be a multiple of each dataset's 1/fps)");
    for (const FeatureSpec& feature : info.features) {
      FeatureSpec spec = feature;
      spec.key = renamed(part, feature.key);
      ++holders[spec.key];
      auto known =
          std::find_if(features.begin(), features.end(), [&](const FeatureSpec& f) { return f.key == spec.key; });
      if (known == features.end()) {
        features.push_back(spec);
        first_holder[spec.key] = describe(part);
        if (spec.kind == FeatureKind::Numeric && spec.shape.size() == 1)
          member_width_[spec.key].assign(members_.size(), 0);
        if (member_width_.count(spec.key)) member_width_[spec.key][m] = spec.shape[0];
        continue;
      }
      const std::string clash = "'" + spec.key + "' is " + spec.dtype + " " + feature_shape_text(spec.shape) + " in " +
                                describe(part) + " and " + known->dtype + " " + feature_shape_text(known->shape) +
                                " in " + first_holder[spec.key];
      if (spec.is_camera() != known->is_camera() || (!spec.is_camera() && spec.dtype != known->dtype))
        throw util::ConfigError("dataset.mixture: feature " + clash);
      if (spec.shape == known->shape) {
        if (member_width_.count(spec.key)) member_width_[spec.key][m] = spec.shape[0];
        continue;
      }
      if (spec.is_camera())
        throw util::ConfigError("dataset.mixture: camera " + clash,
                                "the datasets' frames must have one size to be batched together");
      if (spec.shape.size() != 1 || known->shape.size() != 1)
        throw util::ConfigError("dataset.mixture: feature " + clash,
                                "only 1-D features (state, action) may differ, in width");
      member_width_[spec.key][m] = spec.shape[0];
      known->shape[0] = std::max(known->shape[0], spec.shape[0]);
    }
  }
  std::vector<std::string> dropped;
  for (const FeatureSpec& feature : features) {
    const bool everywhere = holders[feature.key] == members_.size();
    if (feature.is_camera()) {
      if (!everywhere) partial_cameras_.insert(feature.key);
    } else if (!everywhere && !is_default_key(feature.key)) {
      dropped.push_back(feature.key);
      continue;
    }
    if (!feature.is_camera() && everywhere && member_width_.count(feature.key)) {
      const auto& widths = member_width_[feature.key];
      if (std::any_of(widths.begin(), widths.end(), [&](int64_t w) { return w != feature.shape[0]; }))
        padded_features_[feature.key] = feature.shape[0];
    }
    meta_.info.features.push_back(feature);
  }
  for (auto it = member_width_.begin(); it != member_width_.end();)
    it = padded_features_.count(it->first) ? std::next(it) : member_width_.erase(it);
  if (!dropped.empty()) {
    std::string list;
    for (const auto& key : dropped) list += (list.empty() ? "" : ", ") + key;
    spdlog::info(
        "dataset.mixture: left out the feature(s) not in every dataset (as LeRobot's MultiLeRobotDataset "
        "does): {}",
        list);
  }
  for (std::size_t m = 0; m < members_.size(); ++m)
    for (const std::string& camera : partial_cameras_)
      if (!members_[m].to_dataset_key.count(camera)) members_[m].missing_cameras.insert(camera);
}

void MixtureDataset::build_tables() {
  const DatasetInfo& first = member_meta_.front().info;
  DatasetInfo& info = meta_.info;
  std::vector<FeatureSpec> features = std::move(info.features);
  info = first;
  info.features = std::move(features);
  meta_.root = member_meta_.front().root;
  for (std::size_t m = 1; m < members_.size(); ++m)
    if (member_meta_[m].info.robot_type != first.robot_type) info.robot_type.reset();
  // Tasks: one table, each task once, in order of first appearance (as LeRobot's merge writes it).
  std::map<std::string, int64_t> task_of;
  for (std::size_t m = 0; m < members_.size(); ++m) {
    for (const std::string& task : member_meta_[m].tasks) {
      auto [it, added] = task_of.emplace(task, static_cast<int64_t>(meta_.tasks.size()));
      if (added) meta_.tasks.push_back(task);
      members_[m].task_index.push_back(it->second);
    }
  }
  // Episodes: each member's in use, renumbered one after another, frames indexed past the earlier
  // members' frames.
  for (std::size_t m = 0; m < members_.size(); ++m) {
    const MixtureMember& member = members_[m];
    const DatasetMeta& meta = member_meta_[m];
    for (int64_t e : member.episodes) {
      Episode episode = meta.episode(e);
      episode.index = static_cast<int64_t>(meta_.episodes.size());
      episode.from_index += member.index_offset;
      episode.to_index += member.index_offset;
      meta_.episodes.push_back(std::move(episode));
    }
  }
  info.total_episodes = static_cast<int64_t>(meta_.episodes.size());
  info.total_frames = 0;
  for (const MixtureMember& member : members_) info.total_frames += member.num_frames;
  info.total_tasks = static_cast<int64_t>(meta_.tasks.size());

  // Pooled stats, LeRobot's aggregate_stats over the members having each feature. A padded feature
  // is pooled per span of dimensions, over the members that have those dimensions.
  for (std::size_t m = 0; m < members_.size(); ++m) {
    if (!member_meta_[m].stats) {
      meta_.root = member_meta_[m].root;  // "<root> has no stats.json" then names the dataset lacking them
      return;
    }
  }
  DatasetStats pooled;
  for (const FeatureSpec& feature : info.features) {
    if (feature.kind == FeatureKind::Text) continue;
    std::vector<const FeatureStats*> have;
    std::vector<int64_t> widths;
    for (std::size_t m = 0; m < members_.size(); ++m) {
      auto key = members_[m].to_dataset_key.find(feature.key);
      if (key == members_[m].to_dataset_key.end()) continue;
      auto stats = member_meta_[m].stats->find(key->second);
      if (stats == member_meta_[m].stats->end()) {
        have.clear();
        break;  // a member without this feature's stats: none pooled (the policy says so if it needs them)
      }
      have.push_back(&stats->second);
      widths.push_back(padded_features_.count(feature.key) ? member_width_[feature.key][m] : 0);
    }
    if (have.empty()) continue;
    if (!padded_features_.count(feature.key)) {
      std::vector<FeatureStats> list;
      for (const FeatureStats* s : have) list.push_back(*s);
      pooled[feature.key] = aggregate_stats(list);
      continue;
    }
    std::set<int64_t> bounds(widths.begin(), widths.end());
    std::vector<FeatureStats> spans;
    int64_t lo = 0;
    for (int64_t hi : bounds) {
      std::vector<FeatureStats> list;
      for (std::size_t k = 0; k < have.size(); ++k) {
        if (widths[k] < hi) continue;
        FeatureStats cut;
        for (const std::string& name : have[k]->names()) {
          const torch::Tensor& value = have[k]->get(name);
          cut.set(name, name == "count" ? value : value.narrow(-1, lo, hi - lo));
        }
        list.push_back(std::move(cut));
      }
      spans.push_back(aggregate_stats(list));
      lo = hi;
    }
    FeatureStats joined;
    for (const std::string& name : spans.front().names()) {
      if (name == "count") {
        joined.set(name, spans.front().get(name));  // every member has the first span
        continue;
      }
      std::vector<torch::Tensor> parts;
      for (const FeatureStats& span : spans) parts.push_back(span.get(name));
      joined.set(name, torch::cat(parts, -1));
    }
    pooled[feature.key] = std::move(joined);
  }
  if (spec_.stats == MixtureStats::per_dataset) build_per_dataset_stats(pooled);
  meta_.stats = std::move(pooled);
}

void MixtureDataset::build_per_dataset_stats(const DatasetStats& pooled) {
  for (std::size_t m = 0; m < members_.size(); ++m) {
    DatasetStats own;
    for (const FeatureSpec& feature : meta_.info.features) {
      if (feature.kind == FeatureKind::Text) continue;
      auto key = members_[m].to_dataset_key.find(feature.key);
      const FeatureStats* stats = nullptr;
      if (key != members_[m].to_dataset_key.end()) {
        auto found = member_meta_[m].stats->find(key->second);
        if (found != member_meta_[m].stats->end()) stats = &found->second;
      }
      if (!stats) {
        // A camera this dataset lacks (served black and masked): the pooled stats, if any.
        auto found = pooled.find(feature.key);
        if (found != pooled.end()) own[feature.key] = found->second;
        continue;
      }
      auto width = padded_features_.find(feature.key);
      if (width == padded_features_.end() || member_width_[feature.key][m] == width->second) {
        own[feature.key] = *stats;
        continue;
      }
      // Narrower than the mixture's feature: its padded dimensions get neutral stats (mean 0, std 1,
      // range and quantiles -1..1, median 0), so a file of this dataset's stats fits the policy's width
      // and maps a padded 0 to 0 both ways.
      const int64_t pad = width->second - member_width_[feature.key][m];
      FeatureStats padded;
      for (const std::string& name : stats->names()) {
        const torch::Tensor& value = stats->get(name);
        if (name == "count") {
          padded.set(name, value);
          continue;
        }
        const double fill = name == "std" || name == "max" || (name.starts_with("q") && name > "q50") ? 1.0
                            : name == "min" || (name.starts_with("q") && name < "q50")                ? -1.0
                                                                                                      : 0.0;
        const torch::Tensor row = value.dim() == 0 ? value.unsqueeze(0) : value;
        padded.set(name, torch::cat({row, torch::full({pad}, fill, row.options())}, -1));
      }
      own[feature.key] = std::move(padded);
    }
    meta_.per_dataset_stats.emplace_back(members_[m].part.name, std::move(own));
  }
}

void MixtureDataset::open_members(const DatasetOptions& options) {
  // The selected episodes (the mixture's numbering), each member's in its own numbering.
  std::vector<std::vector<int64_t>> local(members_.size());
  auto select = [&](int64_t global) {
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const MixtureMember& member = members_[m];
      const int64_t rank = global - member.first_episode;
      if (rank < static_cast<int64_t>(member.episodes.size())) {
        local[m].push_back(member.episodes[static_cast<std::size_t>(rank)]);
        return;
      }
    }
  };
  std::set<int64_t> chosen;
  if (options.episodes) {
    for (int64_t e : *options.episodes) {
      if (e < 0 || e >= meta_.info.total_episodes)
        throw util::DataError("episode " + std::to_string(e) + " is outside the mixture's episodes 0.." +
                              std::to_string(meta_.info.total_episodes - 1));
      chosen.insert(e);
    }
    if (chosen.empty()) throw util::ConfigError("episodes is empty; give at least one episode index or leave it unset");
  } else {
    for (int64_t e = 0; e < meta_.info.total_episodes; ++e) chosen.insert(e);
  }
  episodes_.assign(chosen.begin(), chosen.end());
  for (int64_t e : episodes_) select(e);

  for (std::size_t m = 0; m < members_.size(); ++m) {
    MixtureMember& member = members_[m];
    member.first_row = num_rows_;
    if (local[m].empty()) continue;
    DatasetOptions own;
    own.episodes = local[m];
    own.tolerance_s = options.tolerance_s;
    own.lazy_rows = true;  // opening reads metadata only; a member's rows load at its first draw
    for (const auto& [key, offsets] : options.delta_timestamps) {
      auto found = member.to_dataset_key.find(key);
      if (found != member.to_dataset_key.end()) own.delta_timestamps[found->second] = offsets;
    }
    if (options.keys) {
      own.keys.emplace();
      for (const std::string& key : *options.keys) {
        auto found = member.to_dataset_key.find(key);
        if (found != member.to_dataset_key.end()) own.keys->push_back(found->second);
      }
    }
    try {
      member.dataset = std::make_shared<LeRobotDataset>(member.part.root, own);
    } catch (const util::Error& error) {
      throw util::ConfigError(describe(member.part) + ": " + error.what(), error.hint());
    }
    num_rows_ += member.dataset->size();
  }
  // The share of draws each member gets.
  SamplingGroups groups = sampling_groups();
  double total = 0;
  std::size_t g = 0;
  for (const MixtureMember& member : members_)
    if (member.dataset)
      total += groups.group_weights.empty() ? static_cast<double>(member.dataset->size()) : groups.group_weights[g++];
  g = 0;
  for (MixtureMember& member : members_) {
    if (!member.dataset) continue;
    member.share =
        (groups.group_weights.empty() ? static_cast<double>(member.dataset->size()) : groups.group_weights[g++]) /
        total;
  }
}

int64_t MixtureDataset::frame_index_count() const {
  return members_.back().index_offset + member_meta_.back().info.total_frames;
}

std::string MixtureDataset::identity() const {
  std::string id = "mixture";
  for (const MixtureMember& member : members_) id += ":" + member.part.root.string();
  return id;
}

std::size_t MixtureDataset::video_streams() const {
  std::size_t streams = 0;
  for (const MixtureMember& member : members_)
    if (member.dataset) streams += member.dataset->video_streams();
  return streams;
}

SamplingGroups MixtureDataset::sampling_groups() const {
  SamplingGroups groups;
  for (const MixtureMember& member : members_) {
    if (!member.dataset) continue;
    groups.group_episodes.push_back(static_cast<int64_t>(member.dataset->episode_indices().size()));
    if (spec_.weighting == MixtureWeighting::frames) continue;
    double weight = member.part.weight.value_or(1.0);
    if (spec_.weighting == MixtureWeighting::balanced) weight *= static_cast<double>(member.dataset->size());
    groups.group_weights.push_back(weight);
  }
  return groups;
}

const MixtureMember& MixtureDataset::member_of_row(int64_t i) const {
  if (i < 0 || i >= num_rows_)
    throw util::DataError("dataset index " + std::to_string(i) + " is out of range 0.." +
                          std::to_string(num_rows_ - 1));
  for (const MixtureMember& member : members_)
    if (member.dataset && i < member.first_row + member.dataset->size()) return member;
  throw util::DataError("dataset index " + std::to_string(i) + " belongs to no dataset of the mixture");
}

std::pair<torch::Tensor, torch::Tensor> MixtureDataset::sum_by_member(const torch::Tensor& index,
                                                                      const torch::Tensor& values) const {
  std::vector<int64_t> offsets;
  for (const MixtureMember& member : members_) offsets.push_back(member.index_offset);
  // On the values' device: no copy to the host (and so no wait for the device) on every step.
  const auto device = values.device();
  const auto frames = index.to(device, torch::kLong).flatten();
  const auto figures = values.detach().to(torch::kDouble).flatten();
  if (frames.numel() != figures.numel())
    throw util::DataError("sum_by_member: " + std::to_string(frames.numel()) + " frame indices for " +
                          std::to_string(figures.numel()) + " values");
  // The member of each frame: the last whose first index is <= it.
  const auto starts = torch::tensor(offsets, torch::kLong).to(device);
  const auto member = torch::searchsorted(starts, frames, false, /*right=*/true) - 1;
  const auto n = static_cast<int64_t>(members_.size());
  const auto options = figures.options();
  auto sums = torch::zeros({n}, options).index_add_(0, member, figures);
  auto counts = torch::zeros({n}, options).index_add_(0, member, torch::ones_like(figures));
  return {sums, counts};
}

Sample MixtureDataset::get(int64_t i, ReadContext& context) const {
  const MixtureMember& member = member_of_row(i);
  Sample local = member.dataset->get(i - member.first_row, context);
  Sample sample;
  for (const auto& [key, value] : local) {
    const bool pad_flag = key.ends_with(kIsPad) && !member.dataset->meta().info.find_feature(key);
    const std::string base = pad_flag ? key.substr(0, key.size() - kIsPad.size()) : key;
    const std::string name = renamed(member.part, base);
    if (!meta_.info.find_feature(name)) continue;  // left out of the mixture
    sample[pad_flag ? name + kIsPad : name] = value;
  }
  sample["index"] = sample.at("index") + member.index_offset;
  sample["episode_index"] =
      torch::scalar_tensor(mixture_episode(member, local.at("episode_index").item<int64_t>()), torch::kLong);
  sample["task_index"] = torch::scalar_tensor(
      member.task_index.at(static_cast<std::size_t>(local.at("task_index").item<int64_t>())), torch::kLong);
  const auto m = static_cast<std::size_t>(&member - members_.data());
  // Which dataset's stats normalize this sample (as LeRobot's MultiLeRobotDataset's dataset_index).
  if (spec_.stats == MixtureStats::per_dataset)
    sample[kDatasetIndexKey] = torch::scalar_tensor(static_cast<int64_t>(m), torch::kLong);
  for (const auto& [key, width] : padded_features_) {
    auto found = sample.find(key);
    if (found == sample.end()) continue;
    const int64_t own = member_width_.at(key)[m];
    // A width-1 feature comes as a scalar per frame (LeRobot's shape [1] -> []): give it its axis.
    const int64_t frame_dims = delta_indices_.count(key) ? 1 : 0;
    if (found->second.dim() == frame_dims) found->second = found->second.unsqueeze(-1);
    if (own < width) found->second = torch::constant_pad_nd(found->second, {0, width - own});
    sample[dim_is_pad_key(key)] = torch::arange(width) >= own;
  }
  for (const std::string& camera : partial_cameras_) {
    const bool missing = member.missing_cameras.count(camera) > 0;
    sample[camera_padding_mask_key(camera)] = torch::scalar_tensor(!missing, torch::kBool);
    if (!missing) continue;
    std::vector<int64_t> shape = meta_.info.feature(camera).chw_shape();
    auto window = delta_indices_.find(camera);
    if (window != delta_indices_.end()) {
      shape.insert(shape.begin(), static_cast<int64_t>(window->second.size()));
      sample[camera + kIsPad] = torch::ones({static_cast<int64_t>(window->second.size())}, torch::kBool);
    }
    sample[camera] = torch::zeros(shape, torch::kByte);
  }
  return sample;
}

const torch::Tensor& MixtureDataset::column(const std::string& key) const {
  std::lock_guard lock(columns_mutex_);
  auto cached = columns_.find(key);
  if (cached != columns_.end()) return cached->second;
  const FeatureSpec& feature = meta_.info.feature(key);  // DataError listing the features
  if (feature.kind != FeatureKind::Numeric) throw util::DataError("feature '" + key + "' is not a numeric column");
  std::vector<torch::Tensor> parts;
  for (std::size_t m = 0; m < members_.size(); ++m) {
    const MixtureMember& member = members_[m];
    if (!member.dataset) continue;
    torch::Tensor part = member.dataset->column(member.to_dataset_key.at(key));
    if (key == "index") part = part + member.index_offset;
    if (key == "task_index") part = torch::tensor(member.task_index, torch::kLong).index_select(0, part);
    if (key == "episode_index") {
      std::vector<int64_t> numbering(member_meta_[m].episodes.size(), -1);
      for (int64_t e : member.episodes) numbering[static_cast<std::size_t>(e)] = mixture_episode(member, e);
      part = torch::tensor(numbering, torch::kLong).index_select(0, part);
    }
    if (padded_features_.count(key)) {
      if (part.dim() == 1) part = part.unsqueeze(-1);  // width 1: a scalar per frame
      part = torch::constant_pad_nd(part, {0, feature.shape[0] - part.size(-1)});
    }
    parts.push_back(part);
  }
  return columns_[key] = torch::cat(parts).contiguous();
}

}  // namespace lrhost::data
