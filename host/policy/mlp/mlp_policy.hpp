// The `mlp` policy: a configurable multi-layer perceptron from one input feature to one target
// feature, trained with MSE or L1. It is the small model of the test suite and of the examples;
// its dims come from the config, or from the dataset features when those are given.
#pragma once
#include "host/policy/config_fields.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy {

struct MlpConfig {
  std::string input_key = "observation.state";
  std::string target_key = "action";
  int64_t input_dim = 0;   // 0: taken from the dataset features
  int64_t output_dim = 0;  // 0: taken from the dataset features
  std::vector<int64_t> hidden_dims{256, 256};
  std::string activation = "relu";  // relu | gelu | tanh
  double dropout = 0.0;
  std::string loss = "mse";  // mse | l1

  // Every field once, in config.json's order (config_fields.hpp).
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    f("input_key", c.input_key);
    f("target_key", c.target_key);
    f("input_dim", c.input_dim);
    f("output_dim", c.output_dim);
    f("hidden_dims", c.hidden_dims);
    f("activation", c.activation, {.one_of = {"relu", "gelu", "tanh"}});
    f("dropout", c.dropout);
    f("loss", c.loss, {.one_of = {"mse", "l1"}});
  }
  bool operator==(const MlpConfig&) const = default;

  static MlpConfig from_json(const nlohmann::json& table, const PolicyFeatures& features);
  nlohmann::ordered_json to_json() const;
};

class MlpPolicy : public Policy {
 public:
  explicit MlpPolicy(MlpConfig config);
  PolicyOutput forward(const Batch& batch) override;
  torch::Tensor select_action(const Batch& batch) override;
  std::string type() const override { return "mlp"; }
  nlohmann::ordered_json config() const override { return config_.to_json(); }
  std::optional<double> training_flops_per_sample() const override;

 private:
  torch::Tensor predict(const Batch& batch);

  MlpConfig config_;
  torch::nn::Sequential layers_;
};

std::shared_ptr<Policy> make_mlp_policy(const nlohmann::json& config, const PolicyFeatures& features);

}  // namespace lrhost::policy
