// Rotary position embedding, in transformers' order of operations and in fp32 throughout (LeRobot
// SmolVLA's).
#include "host/nn/rotary_embedding.hpp"

#include "host/util/error.hpp"

namespace lrhost::nn {

namespace {

void check_positions(const torch::Tensor& positions, const char* function) {
  if (positions.dim() != 2)
    throw util::DataError(std::string(function) + ": position ids must be (batch, length), got shape " +
                          c10::str(positions.sizes()));
}

void check_heads_input(const torch::Tensor& x, const torch::Tensor& positions, int64_t heads_dim,
                       const char* function) {
  const int64_t length_dim = heads_dim == 2 ? 1 : 2;
  if (x.dim() != 4 || x.size(0) != positions.size(0) || x.size(length_dim) != positions.size(1) || x.size(3) % 2)
    throw util::DataError(std::string(function) + ": input of shape " + c10::str(x.sizes()) +
                          " does not match positions " + c10::str(positions.sizes()) +
                          " (expected 4-D with batch and length of the positions and an even head size)");
}

}  // namespace

LlamaRotaryEmbedding::LlamaRotaryEmbedding(int64_t head_dim, double base) {
  if (head_dim <= 0 || head_dim % 2 || !(base > 0))
    throw util::ConfigError("rotary embedding: head_dim must be positive and even and base > 0, got head_dim " +
                            std::to_string(head_dim) + ", base " + std::to_string(base));
  // compute_default_rope_parameters: 1.0 / (base ** (arange(0, dim, 2, int64).float() / dim)).
  auto exponents = torch::arange(0, head_dim, 2, torch::kInt64).to(torch::kFloat32) / head_dim;
  inv_freq_ = torch::reciprocal(torch::pow(c10::Scalar(base), exponents));
}

void LlamaRotaryEmbedding::round_inv_freq_through(c10::ScalarType dtype) {
  inv_freq_ = inv_freq_.to(dtype).to(torch::kFloat32);
}

RotaryTables LlamaRotaryEmbedding::tables(const torch::Tensor& position_ids, c10::ScalarType dtype) const {
  check_positions(position_ids, "LlamaRotaryEmbedding");
  const int64_t batch = position_ids.size(0);
  // LlamaRotaryEmbedding.forward: (B, D/2, 1) @ (B, 1, L) in fp32, transposed; the batched matmul
  // is kept (not a broadcast multiply) so the rounding is the same kernel's.
  auto inv_freq = inv_freq_.to(position_ids.device())
                      .index({torch::indexing::None, torch::indexing::Slice(), torch::indexing::None});
  auto freqs =
      torch::matmul(inv_freq.expand({batch, -1, 1}), position_ids.unsqueeze(1).to(torch::kFloat32)).transpose(1, 2);
  auto angles = torch::cat({freqs, freqs}, -1);
  // transformers multiplies by attention_scaling, which is exactly 1.0 for the default rope type.
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

torch::Tensor apply_rotary_pos_emb(const torch::Tensor& x, const RotaryTables& tables, int64_t heads_dim) {
  if (heads_dim != 1 && heads_dim != 2)
    throw util::ConfigError("apply_rotary_pos_emb: heads_dim must be 1 or 2, got " + std::to_string(heads_dim));
  if (!tables.cos.defined() || tables.cos.dim() != 3)
    throw util::DataError("apply_rotary_pos_emb: cos/sin tables must be (batch, length, head_dim)");
  if (x.dim() != 4 || x.size(0) != tables.cos.size(0) || x.size(heads_dim == 2 ? 1 : 2) != tables.cos.size(1) ||
      x.size(3) != tables.cos.size(2))
    throw util::DataError("apply_rotary_pos_emb: input of shape " + c10::str(x.sizes()) +
                          " does not match the cos/sin tables " + c10::str(tables.cos.sizes()));
  auto cos = tables.cos.unsqueeze(heads_dim);
  auto sin = tables.sin.unsqueeze(heads_dim);
  // rotate_half: cat(-x2, x1).
  const int64_t half = x.size(-1) / 2;
  auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return (x * cos) + (rotated * sin);
}

torch::Tensor apply_rope_fp32(const torch::Tensor& x, const torch::Tensor& positions, double base) {
  check_positions(positions, "apply_rope_fp32");
  check_heads_input(x, positions, 2, "apply_rope_fp32");
  const auto dtype = x.scalar_type();
  const int64_t half = x.size(-1) / 2;
  auto xf = x.to(torch::kFloat32);
  auto exponents = torch::arange(half, torch::TensorOptions(torch::kFloat32).device(x.device())) *
                   (2.0 / static_cast<double>(x.size(-1)));
  auto timescale = torch::pow(c10::Scalar(base), exponents);
  auto radians = positions.unsqueeze(-1).to(torch::kFloat32) / timescale.view({1, 1, half});
  radians = radians.unsqueeze(-2);  // (B, L, 1, D/2), broadcast over heads
  auto sin = torch::sin(radians);
  auto cos = torch::cos(radians);
  auto x1 = xf.narrow(-1, 0, half);
  auto x2 = xf.narrow(-1, half, half);
  auto out = torch::empty_like(xf);
  out.narrow(-1, 0, half).copy_(x1 * cos - x2 * sin);
  out.narrow(-1, half, half).copy_(x2 * cos + x1 * sin);
  return out.to(dtype);
}

}  // namespace lrhost::nn
