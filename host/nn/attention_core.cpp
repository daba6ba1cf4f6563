// Attention between projected heads: transformers' sdpa and eager paths and the eager path with fp32
// scores (LeRobot SmolVLA's).
#include "host/nn/attention_core.hpp"

#include <cmath>
#include <limits>

#include "host/util/error.hpp"

namespace lrhost::nn {

namespace {

using util::DataError;

std::string where(AttentionKernel kernel) {
  return std::string("attention (") + attention_kernel_name(kernel) + ")";
}

// Checks shapes and returns the mask as 4-D (B or 1, 1 or H, Lq, Lk), or undefined.
torch::Tensor checked_mask(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                           const torch::Tensor& mask, AttentionKernel kernel) {
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4)
    throw DataError(where(kernel) + ": query, key and value must be (batch, length, heads, head_dim), got " +
                    c10::str(query.sizes()) + ", " + c10::str(key.sizes()) + ", " + c10::str(value.sizes()));
  const int64_t batch = query.size(0), heads = query.size(2), kv_heads = key.size(2);
  if (key.sizes() != value.sizes() || key.size(0) != batch || key.size(3) != query.size(3))
    throw DataError(where(kernel) + ": key " + c10::str(key.sizes()) + " and value " + c10::str(value.sizes()) +
                    " must have the same shape, with the batch and head_dim of query " + c10::str(query.sizes()));
  if (kv_heads == 0 || heads % kv_heads != 0)
    throw DataError(where(kernel) + ": query heads (" + std::to_string(heads) +
                    ") must be a multiple of key/value heads (" + std::to_string(kv_heads) + ")");
  if (!mask.defined()) return mask;
  auto m = mask.dim() == 3 ? mask.unsqueeze(1) : mask;
  const int64_t lq = query.size(1), lk = key.size(1);
  if (m.dim() != 4 || (m.size(0) != batch && m.size(0) != 1) || (m.size(1) != 1 && m.size(1) != heads) ||
      m.size(2) != lq || m.size(3) != lk)
    throw DataError(where(kernel) + ": mask of shape " + c10::str(mask.sizes()) + " does not fit (" +
                    std::to_string(batch) + " or 1, [1 or " + std::to_string(heads) + ",] " + std::to_string(lq) +
                    ", " + std::to_string(lk) + ") for query " + c10::str(query.sizes()) + " and key " +
                    c10::str(key.sizes()));
  if (m.scalar_type() != torch::kBool) {
    if (kernel == AttentionKernel::eager_fp32_scores)
      throw DataError(where(kernel) + ": the mask must be boolean (true = may attend), got " +
                      std::string(c10::toString(m.scalar_type())));
    if (!c10::isFloatingType(m.scalar_type()))
      throw DataError(where(kernel) + ": the mask must be boolean or an additive floating-point mask, got " +
                      std::string(c10::toString(m.scalar_type())));
  }
  return m;
}

// transformers' repeat_kv on (B, Hkv, L, D): kv head j serves query heads j·groups .. j·groups+groups-1.
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2).expand({s[0], s[1], groups, s[2], s[3]}).reshape({s[0], s[1] * groups, s[2], s[3]});
}

torch::Tensor causal_mask(int64_t lq, int64_t lk, const torch::Device& device) {
  return torch::ones({lq, lk}, torch::TensorOptions(torch::kBool).device(device)).tril();
}

// torch.finfo(dtype).min, the fill transformers uses for masked scores.
double finfo_min(c10::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32:
      return std::numeric_limits<float>::lowest();
    case torch::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kFloat16:
      return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    default:
      return std::numeric_limits<double>::lowest();
  }
}

// (B, H, Lq, D) -> (B, Lq, H·D)
torch::Tensor merge_heads(const torch::Tensor& x) {
  return x.transpose(1, 2).contiguous().reshape({x.size(0), x.size(2), -1});
}

torch::Tensor sdpa(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                   const torch::Tensor& mask, bool causal, double scale, int64_t groups) {
  if (mask.defined() && mask.scalar_type() != torch::kBool && mask.scalar_type() != query.scalar_type())
    throw DataError(where(AttentionKernel::sdpa) + ": an additive mask must have the query's dtype (" +
                    std::string(c10::toString(query.scalar_type())) + "), got " +
                    std::string(c10::toString(mask.scalar_type())));
  auto q = query.transpose(1, 2), k = key.transpose(1, 2), v = value.transpose(1, 2);
  // transformers' use_gqa_in_sdpa: enable_gqa only without a mask; otherwise kv heads are repeated.
  const bool gqa = !mask.defined();
  if (!gqa) {
    k = repeat_kv(k, groups);
    v = repeat_kv(v, groups);
  }
  const bool is_causal = causal && !mask.defined() && query.size(1) > 1;
  auto out = at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt,
                                              0.0, is_causal, scale, gqa && groups > 1);
  return merge_heads(out);
}

torch::Tensor transformers_eager(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                                 torch::Tensor mask, double scale, int64_t groups) {
  auto q = query.transpose(1, 2);
  auto k = repeat_kv(key.transpose(1, 2), groups);
  auto v = repeat_kv(value.transpose(1, 2), groups);
  auto weights = torch::matmul(q, k.transpose(2, 3)) * scale;
  if (mask.defined()) {
    if (mask.scalar_type() == torch::kBool) {
      mask = torch::zeros(mask.sizes(), q.options()).masked_fill(mask.logical_not(), finfo_min(q.scalar_type()));
    }
    weights = weights + mask;
  }
  weights = torch::softmax(weights, -1, torch::kFloat32).to(q.scalar_type());
  return merge_heads(torch::matmul(weights, v));
}

torch::Tensor eager_fp32_scores(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                                const torch::Tensor& mask, double scale, int64_t groups) {
  const int64_t batch = query.size(0), lk = key.size(1), kv_heads = key.size(2), head_dim = key.size(3);
  // K/V expanded (B, Lk, Hkv, groups, D) -> (B, Lk, H, D), in the (batch, length, heads, dim) layout
  // LeRobot SmolVLA expands them in.
  auto expand = [&](const torch::Tensor& x) {
    return x.unsqueeze(3)
        .expand({batch, lk, kv_heads, groups, head_dim})
        .reshape({batch, lk, kv_heads * groups, head_dim});
  };
  auto k = expand(key).to(torch::kFloat32).transpose(1, 2);
  auto v = expand(value);
  auto q = query.to(torch::kFloat32).transpose(1, 2);
  auto weights = torch::matmul(q, k.transpose(2, 3));
  weights.mul_(scale);
  // Cast to fp32 again here, as LeRobot SmolVLA does: under autocast the matmul gives bf16, and the
  // finfo(float32).min fill below would overflow bf16.
  weights = weights.to(torch::kFloat32);
  if (mask.defined())
    weights =
        torch::where(mask, weights, torch::scalar_tensor(std::numeric_limits<float>::lowest(), weights.options()));
  auto probs = torch::softmax(weights, -1).to(v.scalar_type());
  auto out = torch::matmul(probs, v.permute({0, 2, 1, 3}));
  return out.permute({0, 2, 1, 3}).reshape({batch, -1, kv_heads * groups * head_dim});
}

}  // namespace

const char* attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::sdpa:
      return "sdpa";
    case AttentionKernel::eager:
      return "eager";
    case AttentionKernel::eager_fp32_scores:
      return "eager_fp32_scores";
  }
  return "?";
}

torch::Tensor attend(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                     const torch::Tensor& mask, const AttentionOptions& options) {
  auto m = checked_mask(query, key, value, mask, options.kernel);
  const int64_t groups = query.size(2) / key.size(2);
  const double scale = options.scale.value_or(std::pow(static_cast<double>(query.size(3)), -0.5));
  if (!m.defined() && options.causal && query.size(1) > 1 && options.kernel != AttentionKernel::sdpa)
    m = causal_mask(query.size(1), key.size(1), query.device()).view({1, 1, query.size(1), key.size(1)});
  switch (options.kernel) {
    case AttentionKernel::sdpa:
      return sdpa(query, key, value, m, options.causal, scale, groups);
    case AttentionKernel::eager:
      return transformers_eager(query, key, value, m, scale, groups);
    case AttentionKernel::eager_fp32_scores:
      return eager_fp32_scores(query, key, value, m, scale, groups);
  }
  throw util::ConfigError("attention: unknown kernel");
}

}  // namespace lrhost::nn
