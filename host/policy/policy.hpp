// The policy interface every model type implements (MLP now; ACT and Diffusion later): a LibTorch
// module that maps a batch (named tensors) to a training loss plus named outputs, and says how its
// parameters split into optimizer groups.
#pragma once
#include <torch/torch.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/accel/autocast.hpp"

namespace lrhost::policy {

// A batch as the loader delivers it: feature name -> tensor with a leading batch dimension.
using Batch = std::map<std::string, torch::Tensor>;

struct PolicyOutput {
  torch::Tensor loss;                           // scalar, the training objective
  std::map<std::string, torch::Tensor> parts;   // loss parts and predictions, for logging
};

// One optimizer parameter group; unset fields inherit the optimizer's options.
struct ParamGroup {
  std::string name;
  std::vector<torch::Tensor> params;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

// Shapes of the dataset features a policy is built for (empty when built from config alone).
struct FeatureShapes {
  std::map<std::string, std::vector<int64_t>> inputs;
  std::map<std::string, std::vector<int64_t>> outputs;
};

class Policy : public torch::nn::Module {
 public:
  // The training forward as recipes call it: forward() under the autocast its accelerator chose,
  // with the loss returned in fp32.
  PolicyOutput run(const Batch& batch);
  void set_autocast(std::optional<accel::AutocastSpec> spec) { autocast_ = spec; }

  virtual PolicyOutput forward(const Batch& batch) = 0;
  // The action for the given observations (no targets needed), LeRobot's select_action for
  // single-step policies. The default says loudly that the policy has none.
  virtual torch::Tensor select_action(const Batch& batch);
  // Registry name, e.g. "mlp".
  virtual std::string type() const = 0;
  // The resolved config (every field, defaults filled in), as saved to config.json.
  virtual nlohmann::json config() const = 0;
  // Optimizer groups; the default is one group holding every trainable parameter.
  virtual std::vector<ParamGroup> param_groups() const;

  std::vector<torch::Tensor> trainable_parameters() const;
  int64_t num_parameters() const;

 private:
  std::optional<accel::AutocastSpec> autocast_;
};

// Looks up a batch entry, failing with the policy name and the keys that are present.
const torch::Tensor& require_input(const Batch& batch, const std::string& key, const std::string& policy_type);

}  // namespace lrhost::policy
