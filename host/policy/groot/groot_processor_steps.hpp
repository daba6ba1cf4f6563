// GR00T N1.7's own processor steps as lrhost runs and saves them (PolicyProcessors holds one of these
// for a groot pipeline; the stats live in its (un)normalizer steps, as LeRobot's state files hold them):
//  - groot_n1_7_pack_inputs_v1 (GrootN17PackInputsStep): state / action min/max normalised to [-1, 1]
//    and padded, action_mask, embodiment_id, the cameras in sorted key order — with a base checkpoint's
//    own statistics (raw_stats / modality_config inline) the action per modality group, the cameras in
//    its video_modality_keys order and its valid action horizon and video horizon;
//  - groot_n1_7_vlm_encode_v1 (GrootN17VLMEncodeStep): the frames through the N1.7 image transform and
//    Qwen2VLImageProcessor into pixel_values (B, V·patches, C·Tp·P·P) / image_grid_thw (B, V, 3) —
//    LeRobot's flat (patches, ...) / (images, 3) with a leading batch dimension, since every sample has
//    the same cameras and sizes — and the chat prompt's input_ids / attention_mask (groot_prompt.hpp);
//  - groot_action_unpack_unnormalize_v2 (GrootActionUnpackUnnormalizeStep): the inverse for actions
//    with the dataset's stats, or groot_n1_7_action_decode_v1 (GrootN17ActionDecodeStep) with the
//    checkpoint's (groot_checkpoint_stats.hpp), the LIBERO transform included.
// The numerical parts are groot_pack.hpp / groot_images.hpp. Each step's JSON config is written with
// LeRobot's keys and values and read back checked (what lrhost does not implement refused by name).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/data/stats/feature_stats.hpp"
#include "host/policy/groot/groot_checkpoint_stats.hpp"
#include "host/policy/groot/groot_images.hpp"
#include "host/policy/groot/groot_prompt.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::groot {

class GrootProcessorSteps {
 public:
  // The steps of a groot policy (ConfigError for another policy type).
  static std::shared_ptr<GrootProcessorSteps> for_policy(const Policy& policy);
  // Empty steps for reading a pipeline's files into (read_*_config fill them).
  GrootProcessorSteps() = default;

  nlohmann::ordered_json pack_config() const { return pack_; }
  nlohmann::ordered_json vlm_config(const std::string& device) const;
  nlohmann::ordered_json unpack_config() const { return unpack_; }
  nlohmann::ordered_json decode_config() const { return decode_; }
  // From a pipeline file's step config; DataError / NotImplemented naming `where` and the key.
  void read_pack_config(const nlohmann::ordered_json& config, const std::string& where);
  void read_vlm_config(const nlohmann::ordered_json& config, const std::string& where);
  void read_unpack_config(const nlohmann::ordered_json& config, const std::string& where);
  void read_decode_config(const nlohmann::ordered_json& config, const std::string& where);

  // Whether the postprocessor decodes with the checkpoint's statistics (groot_n1_7_action_decode_v1)
  // rather than the dataset's (groot_action_unpack_unnormalize_v2).
  bool decodes_with_checkpoint_stats() const { return decode_stats_.has_value(); }
  // The pack step's state-file stats with checkpoint statistics, as LeRobot flattens them
  // (observation.state / action: min, max, mean, std in float32; q01 / q99 as min / max with
  // use_percentiles); nullopt for a new embodiment (the dataset's stats).
  std::optional<data::DatasetStats> checkpoint_flat_stats() const;

  // The pack step on a batch (observation.state, action, action_is_pad, the cameras): adds state,
  // action (replacing the raw one), action_mask, embodiment_id; the cameras stay for the VLM step.
  Batch pack(Batch batch, const data::DatasetStats& stats) const;
  // The VLM step: the cameras become pixel_values / image_grid_thw (and leave the batch); the prompt
  // of `texts` (the rows' task strings) or of the batch's task_index through the task table.
  Batch encode(Batch batch, const std::vector<std::string>* texts) const;
  // The postprocessor's action step: unpack with `stats` (the dataset's), or the checkpoint decode.
  torch::Tensor unpack(const torch::Tensor& action, const data::DatasetStats& stats) const;
  // A dataset's tasks by task_index: formalized as the pack step does, tokenized once.
  void set_task_table(const std::vector<std::string>& tasks) const;

  bool operator==(const GrootProcessorSteps& other) const {
    return pack_ == other.pack_ && vlm_ == other.vlm_ && unpack_ == other.unpack_ && decode_ == other.decode_;
  }

 private:
  // The task texts as the VLM step tokenizes them (pack's formalize, then the VLM step's defaulting).
  std::vector<std::string> languages(const std::vector<std::string>& tasks) const;
  const GrootPromptEncoder& prompt() const;

  nlohmann::ordered_json pack_, vlm_, unpack_, decode_;  // the configs as LeRobot writes them (decode_ or unpack_)
  // The checkpoint statistics of the pack step's and the decode step's configs (nullopt: none).
  std::optional<GrootCheckpointStats> pack_stats_, decode_stats_;
  GrootImageGeometry image_geometry_;
  QwenImageProcessorConfig image_processor_;
  std::string tokenizer_name_;
  std::shared_ptr<const GrootPromptEncoder> prompt_;  // the VLM step's tokenizer (read_vlm_config)
  // Task text ids by task_index: a cache of the tokenizer's output set before batches flow (as
  // PolicyProcessors::set_task_table's), hence mutable.
  mutable std::vector<std::vector<std::int32_t>> table_;
};

// Qwen2VLImageProcessor's settings from a tokenizer/processor folder's preprocessor_config.json
// (DataError naming the file for a missing file or key of the wrong type).
QwenImageProcessorConfig read_image_processor_config(const std::filesystem::path& dir);

}  // namespace lrhost::policy::groot
