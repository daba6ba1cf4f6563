// GR00T's per-embodiment layers; see category_specific.hpp.
#include "host/policy/groot/category_specific.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy::groot {

CategorySpecificLinearImpl::CategorySpecificLinearImpl(int64_t categories, int64_t input_dim, int64_t output_dim) {
  // LeRobot's initialisation (0.02 * randn, zero bias); a loaded checkpoint replaces both.
  W = register_parameter("W", 0.02 * torch::randn({categories, input_dim, output_dim}));
  b = register_parameter("b", torch::zeros({categories, output_dim}));
}

torch::Tensor CategorySpecificLinearImpl::forward(const torch::Tensor& x, const torch::Tensor& ids) {
  const auto index = ids.to(torch::kLong);
  if (index.numel() && (index.min().item<int64_t>() < 0 || index.max().item<int64_t>() >= W.size(0)))
    throw util::DataError("embodiment_id outside 0.." + std::to_string(W.size(0) - 1) +
                          " (the model's max_num_embodiments)");
  return torch::bmm(x, W.index_select(0, index)) + b.index_select(0, index).unsqueeze(1);
}

CategorySpecificMLPImpl::CategorySpecificMLPImpl(int64_t categories, int64_t input_dim, int64_t hidden_dim,
                                                 int64_t output_dim)
    : layer1(register_module("layer1", CategorySpecificLinear(categories, input_dim, hidden_dim))),
      layer2(register_module("layer2", CategorySpecificLinear(categories, hidden_dim, output_dim))) {}

torch::Tensor CategorySpecificMLPImpl::forward(const torch::Tensor& x, const torch::Tensor& ids) {
  return layer2(torch::relu(layer1(x, ids)), ids);
}

torch::Tensor groot_time_sinusoid(const torch::Tensor& timesteps, int64_t dim) {
  const auto t = timesteps.to(torch::kFloat);
  const int64_t half = dim / 2;
  // ln(10000) / half as LeRobot computes it: a CPU fp32 scalar tensor, divided in fp32.
  const auto rate = torch::log(torch::tensor(10000.0f)) / half;
  const auto exponent = -torch::arange(half, t.options()) * rate.to(t.device());
  const auto freqs = t.unsqueeze(-1) * exponent.exp();
  return torch::cat({torch::sin(freqs), torch::cos(freqs)}, -1);
}

MultiEmbodimentActionEncoderImpl::MultiEmbodimentActionEncoderImpl(int64_t action_dim, int64_t hidden_size,
                                                                   int64_t categories)
    : W1(register_module("W1", CategorySpecificLinear(categories, action_dim, hidden_size))),
      W2(register_module("W2", CategorySpecificLinear(categories, 2 * hidden_size, hidden_size))),
      W3(register_module("W3", CategorySpecificLinear(categories, hidden_size, hidden_size))),
      hidden_size_(hidden_size) {}

torch::Tensor MultiEmbodimentActionEncoderImpl::forward(const torch::Tensor& actions, const torch::Tensor& timesteps,
                                                        const torch::Tensor& ids) {
  if (timesteps.dim() != 1 || timesteps.size(0) != actions.size(0))
    throw util::DataError("action encoder: timesteps must be (B,), one bucket per sample");
  const auto per_step = timesteps.unsqueeze(1).expand({-1, actions.size(1)});
  const auto action_emb = W1(actions, ids);
  const auto time_emb = groot_time_sinusoid(per_step, hidden_size_).to(action_emb.scalar_type());
  const auto x = W2(torch::cat({action_emb, time_emb}, -1), ids);
  return W3(x * torch::sigmoid(x), ids);  // swish
}

}  // namespace lrhost::policy::groot
