// The configuration of the `act` policy: LeRobot's PreTrainedConfig base fields followed by ACTConfig's
// fields, in LeRobot's dataclass order and with LeRobot HEAD's defaults, read strictly from a recipe
// table or a config.json and written back as config.json. Validation is LeRobot's __post_init__ and
// validate_features plus what LeRobot only finds out at construction (heads dividing dim_model, a
// usable activation); lrhost-specific limits (ResNet-18 only, backbone weights from a local
// file, never downloaded) are reported as such.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"

namespace lrhost::policy::act {

// The PreTrainedConfig fields (configs/policies.py) come first, from the base.
struct ACTConfig : PretrainedConfigFields {
  // ACTConfig (policies/act/configuration_act.py).
  int64_t chunk_size = 100;
  int64_t n_action_steps = 100;
  NormalizationMapping normalization_mapping{{"VISUAL", "MEAN_STD"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}};
  std::string vision_backbone = "resnet18";
  // LeRobot's default names torchvision's ImageNet weights (ResNet18_Weights.IMAGENET1K_V1, a download);
  // lrhost's default for a table without the key is none (random init; the shipped recipes hold "",
  // and `lrhost lerobot-train` passes LeRobot's value: the spec's lerobot_values). A value is that
  // name, read from the local torch hub cache, or a local .safetensors/.pth file holding a torchvision
  // resnet18 state_dict (policy/vision/backbone_weights.hpp).
  std::optional<std::string> pretrained_backbone_weights;
  bool replace_final_stride_with_dilation = false;
  bool pre_norm = false;
  int64_t dim_model = 512;
  int64_t n_heads = 8;
  int64_t dim_feedforward = 3200;
  std::string feedforward_activation = "relu";
  int64_t n_encoder_layers = 4;
  int64_t n_decoder_layers = 1;
  bool use_vae = true;
  int64_t latent_dim = 32;
  int64_t n_vae_encoder_layers = 4;
  std::optional<double> temporal_ensemble_coeff;
  double dropout = 0.1;
  double kl_weight = 10.0;
  double optimizer_lr = 1e-5;
  double optimizer_weight_decay = 1e-4;
  double optimizer_lr_backbone = 1e-5;

  // Every field once, PreTrainedConfig's first, in LeRobot's order: f("name", c.member, {traits}).
  // The one list behind from_json, to_json and weight_shape_fields (config_fields.hpp).
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    PretrainedConfigFields::fields(c, f, /*n_obs_steps_shapes_weights=*/true);
    f("chunk_size", c.chunk_size, {.shapes_weights = true});
    f("n_action_steps", c.n_action_steps);
    f("normalization_mapping", c.normalization_mapping);
    f("vision_backbone", c.vision_backbone, {.shapes_weights = true});
    f("pretrained_backbone_weights", c.pretrained_backbone_weights, {.text_null = true});
    f("replace_final_stride_with_dilation", c.replace_final_stride_with_dilation, {.bool_or_int = true});
    f("pre_norm", c.pre_norm, {.shapes_weights = true});
    f("dim_model", c.dim_model, {.shapes_weights = true});
    f("n_heads", c.n_heads);
    f("dim_feedforward", c.dim_feedforward, {.shapes_weights = true});
    f("feedforward_activation", c.feedforward_activation);
    f("n_encoder_layers", c.n_encoder_layers, {.shapes_weights = true});
    f("n_decoder_layers", c.n_decoder_layers, {.shapes_weights = true});
    f("use_vae", c.use_vae, {.shapes_weights = true});
    f("latent_dim", c.latent_dim, {.shapes_weights = true});
    f("n_vae_encoder_layers", c.n_vae_encoder_layers, {.shapes_weights = true});
    f("temporal_ensemble_coeff", c.temporal_ensemble_coeff);
    f("dropout", c.dropout);
    f("kl_weight", c.kl_weight);
    f("optimizer_lr", c.optimizer_lr);
    f("optimizer_weight_decay", c.optimizer_weight_decay);
    f("optimizer_lr_backbone", c.optimizer_lr_backbone);
  }
  bool operator==(const ACTConfig&) const = default;

  // Reads every field strictly (unknown keys and wrong types are ConfigErrors). Features come from
  // the table's input_features/output_features when non-empty, else from `dataset_features`.
  static ACTConfig from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  // config.json content: "type" first, then every field in LeRobot's order.
  nlohmann::ordered_json to_json() const;
  // The fields that shape ACT's weights (the decoder's positional table has chunk_size rows, the
  // layer counts and widths name and size the parameters): a pretrained ACT cannot change them.
  static const std::vector<std::string>& weight_shape_fields();
  // LeRobot's checks; throws util::ConfigError (or util::NotImplemented for what lrhost lacks).
  void validate() const;
};

}  // namespace lrhost::policy::act
