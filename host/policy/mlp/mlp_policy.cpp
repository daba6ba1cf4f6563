// MLP policy: config parsing, layer construction and the regression loss.
#include "host/policy/mlp/mlp_policy.hpp"

#include "host/nn/forward_hooks.hpp"
#include "host/policy/training_flops.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

namespace {
// The feature's flat size, or 0 when the dataset does not provide it.
int64_t feature_size(const PolicyFeature* feature) {
  return feature ? feature->numel() : 0;
}

// A Linear layer that FSDP can wrap (its forward runs the unit hooks). Same parameters, names and
// initialisation as torch::nn::Linear, so checkpoints and seeds are unchanged.
class MlpLinearImpl : public torch::nn::LinearImpl {
 public:
  using torch::nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& input) {
    return nn::hooked_forward(*this, [&] { return torch::nn::LinearImpl::forward(input); });
  }
};
TORCH_MODULE(MlpLinear);

[[maybe_unused]] const bool kMlpLinearHookable = nn::register_hookable_module_type("MlpLinear");
}  // namespace

MlpConfig MlpConfig::from_json(const nlohmann::json& table, const PolicyFeatures& features) {
  FieldReader reader(table, "policy 'mlp'");
  reader.expect_type("mlp");
  MlpConfig c;
  read_config_fields(c, reader);
  reader.finish();
  // Dims the table leaves out are the dataset features' sizes.
  if (!reader.given(&c.input_dim)) c.input_dim = feature_size(features.find_input(c.input_key));
  if (!reader.given(&c.output_dim)) c.output_dim = feature_size(features.find_output(c.target_key));
  if (c.input_dim <= 0 || c.output_dim <= 0)
    throw util::ConfigError("policy 'mlp': input_dim and output_dim must be positive (got " +
                                std::to_string(c.input_dim) + " and " + std::to_string(c.output_dim) + ")",
                            "set policy.input_dim / policy.output_dim, or build the policy from a dataset");
  for (auto d : c.hidden_dims)
    if (d <= 0) throw util::ConfigError("policy 'mlp': hidden_dims must be positive, got " + std::to_string(d));
  if (c.dropout < 0 || c.dropout >= 1)
    throw util::ConfigError("policy 'mlp': dropout must be in [0, 1), got " + std::to_string(c.dropout));
  return c;
}

nlohmann::ordered_json MlpConfig::to_json() const {
  return write_config_fields(*this, "mlp");
}

MlpPolicy::MlpPolicy(MlpConfig config) : config_(std::move(config)) {
  int64_t width = config_.input_dim;
  for (auto hidden : config_.hidden_dims) {
    layers_->push_back(MlpLinear(width, hidden));
    if (config_.activation == "relu")
      layers_->push_back(torch::nn::ReLU());
    else if (config_.activation == "gelu")
      layers_->push_back(torch::nn::GELU());
    else
      layers_->push_back(torch::nn::Tanh());
    if (config_.dropout > 0) layers_->push_back(torch::nn::Dropout(config_.dropout));
    width = hidden;
  }
  layers_->push_back(MlpLinear(width, config_.output_dim));
  register_module("layers", layers_);
}

torch::Tensor MlpPolicy::predict(const Batch& batch) {
  const auto& input = require_input(batch, config_.input_key, "mlp");
  auto x = input.flatten(1).to(torch::kFloat32);
  if (x.size(1) != config_.input_dim)
    throw util::ConfigError(
        "mlp policy: '" + config_.input_key + "' has " + std::to_string(x.size(1)) +
        " features per sample, the policy expects input_dim = " + std::to_string(config_.input_dim));
  return layers_->forward(x);
}

torch::Tensor MlpPolicy::select_action(const Batch& batch) {
  return predict(batch);
}

PolicyOutput MlpPolicy::forward(const Batch& batch) {
  const auto& target = require_input(batch, config_.target_key, "mlp");
  auto prediction = predict(batch);
  auto y = target.flatten(1).to(prediction.dtype());
  if (y.sizes() != prediction.sizes())
    throw util::ConfigError("mlp policy: '" + config_.target_key + "' has shape " + c10::str(target.sizes()) +
                            ", the policy predicts " + c10::str(prediction.sizes()));
  PolicyOutput out;
  auto mse = torch::mse_loss(prediction, y);
  auto l1 = torch::l1_loss(prediction, y);
  out.loss = config_.loss == "mse" ? mse : l1;
  out.parts = {{"mse_loss", mse.detach()}, {"l1_loss", l1.detach()}, {"prediction", prediction}};
  return out;
}

std::optional<double> MlpPolicy::training_flops_per_sample() const {
  TrainingFlops flops;
  int64_t width = config_.input_dim;
  bool input_needs_grad = false;  // the batch's features need no gradient; every later layer's input does
  for (auto hidden : config_.hidden_dims) {
    flops.matmul(1, static_cast<double>(width), static_cast<double>(hidden), true, input_needs_grad);
    input_needs_grad = true;
    width = hidden;
  }
  flops.matmul(1, static_cast<double>(width), static_cast<double>(config_.output_dim), true, input_needs_grad);
  return flops.total();
}

std::shared_ptr<Policy> make_mlp_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  return std::make_shared<MlpPolicy>(MlpConfig::from_json(config, features));
}

}  // namespace lrhost::policy
