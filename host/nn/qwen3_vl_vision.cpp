// Qwen3-VL's vision tower; see qwen3_vl_vision.hpp.
#include "host/nn/qwen3_vl_vision.hpp"

#include <algorithm>
#include <cmath>

#include "host/config/config_reader.hpp"
#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {
namespace F = torch::nn::functional;
namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

std::vector<std::array<int64_t, 3>> grids_of(const torch::Tensor& grid_thw) {
  if (grid_thw.dim() != 2 || grid_thw.size(1) != 3)
    throw util::DataError("image_grid_thw must be (images, 3), got " + c10::str(grid_thw.sizes()));
  const auto rows = grid_thw.to(torch::kCPU, torch::kLong).contiguous();
  std::vector<std::array<int64_t, 3>> grids;
  const int64_t* v = rows.data_ptr<int64_t>();
  for (int64_t i = 0; i < rows.size(0); ++i) grids.push_back({v[3 * i], v[3 * i + 1], v[3 * i + 2]});
  return grids;
}

}  // namespace

Qwen3VLVisionConfig Qwen3VLVisionConfig::from_json(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) throw util::ConfigError(where + ": expected a JSON object");
  Qwen3VLVisionConfig c;
  config::ConfigReader reader(object, where);  // other keys (initializer_range, ...) are not the tower's
  c.depth = reader.positive_integer("depth", c.depth);
  c.hidden_size = reader.positive_integer("hidden_size", c.hidden_size);
  c.intermediate_size = reader.positive_integer("intermediate_size", c.intermediate_size);
  c.num_heads = reader.positive_integer("num_heads", c.num_heads);
  c.in_channels = reader.positive_integer("in_channels", c.in_channels);
  c.patch_size = reader.positive_integer("patch_size", c.patch_size);
  c.temporal_patch_size = reader.positive_integer("temporal_patch_size", c.temporal_patch_size);
  c.spatial_merge_size = reader.positive_integer("spatial_merge_size", c.spatial_merge_size);
  c.out_hidden_size = reader.positive_integer("out_hidden_size", c.out_hidden_size);
  c.num_position_embeddings = reader.positive_integer("num_position_embeddings", c.num_position_embeddings);
  c.deepstack_visual_indexes = reader.integer_list("deepstack_visual_indexes", c.deepstack_visual_indexes);
  if (object.contains("hidden_act") && object["hidden_act"] != "gelu_pytorch_tanh")
    throw util::ConfigError(where + ": hidden_act " + object["hidden_act"].dump() +
                            " is not supported (only \"gelu_pytorch_tanh\")");
  if (c.hidden_size % c.num_heads || c.head_dim() % 4)
    throw util::ConfigError(where + ": hidden_size / num_heads must be a multiple of 4 (2-D rotary)");
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(c.num_position_embeddings))));
  if (side * side != c.num_position_embeddings)
    throw util::ConfigError(where + ": num_position_embeddings must be a square (a grid), got " +
                            std::to_string(c.num_position_embeddings));
  for (int64_t index : c.deepstack_visual_indexes)
    if (index < 0 || index >= c.depth)
      throw util::ConfigError(where + ": deepstack_visual_indexes lists " + std::to_string(index) + ", outside the " +
                              std::to_string(c.depth) + " blocks");
  return c;
}

Qwen3VisionAttentionImpl::Qwen3VisionAttentionImpl(const Qwen3VLVisionConfig& config)
    : heads_(config.num_heads), head_dim_(config.head_dim()) {
  qkv = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(config.hidden_size, 3 * config.hidden_size)));
  proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(config.hidden_size, config.hidden_size)));
}

torch::Tensor Qwen3VisionAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                                const torch::Tensor& sin, const std::vector<int64_t>& lengths) {
  const int64_t n = x.size(0);
  const auto parts = apply_linear(qkv, x).reshape({n, 3, heads_, -1}).permute({1, 0, 2, 3}).unbind(0);
  // apply_rotary_pos_emb_vision: in fp32, cos/sin broadcast over the heads.
  auto rotate = [&](const torch::Tensor& t) {
    const auto f = t.to(torch::kFloat);
    const auto c = cos.unsqueeze(-2).to(torch::kFloat), s = sin.unsqueeze(-2).to(torch::kFloat);
    return (f * c + rotate_half(f) * s).to(t.scalar_type());
  };
  const auto q = rotate(parts[0]).transpose(0, 1).unsqueeze(0);  // (1, H, N, D)
  const auto k = rotate(parts[1]).transpose(0, 1).unsqueeze(0);
  const auto v = parts[2].transpose(0, 1).unsqueeze(0);
  // Each image (each frame) attends within itself only.
  const auto qs = q.split_with_sizes(lengths, 2), ks = k.split_with_sizes(lengths, 2),
             vs = v.split_with_sizes(lengths, 2);
  std::vector<torch::Tensor> outputs;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  for (std::size_t i = 0; i < lengths.size(); ++i)
    outputs.push_back(at::scaled_dot_product_attention(qs[i], ks[i], vs[i], {}, 0.0, false, scale).transpose(1, 2));
  return apply_linear(proj, torch::cat(outputs, 1).reshape({n, -1}));
}

Qwen3VisionMLPImpl::Qwen3VisionMLPImpl(const Qwen3VLVisionConfig& config)
    : linear_fc1(register_module("linear_fc1", torch::nn::Linear(config.hidden_size, config.intermediate_size))),
      linear_fc2(register_module("linear_fc2", torch::nn::Linear(config.intermediate_size, config.hidden_size))) {}

torch::Tensor Qwen3VisionMLPImpl::forward(const torch::Tensor& x) {
  return apply_linear(linear_fc2, F::gelu(apply_linear(linear_fc1, x), F::GELUFuncOptions().approximate("tanh")));
}

Qwen3VisionBlockImpl::Qwen3VisionBlockImpl(const Qwen3VLVisionConfig& config)
    : norm1(
          register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(1e-6)))),
      norm2(
          register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(1e-6)))),
      attn(register_module("attn", Qwen3VisionAttention(config))),
      mlp(register_module("mlp", Qwen3VisionMLP(config))) {}

torch::Tensor Qwen3VisionBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                            const std::vector<int64_t>& lengths) {
  const auto h = x + attn(norm1(x), cos, sin, lengths);
  return h + mlp(norm2(h));
}

Qwen3PatchMergerImpl::Qwen3PatchMergerImpl(const Qwen3VLVisionConfig& config, bool postshuffle_norm)
    : merged_width_(config.hidden_size * config.spatial_merge_size * config.spatial_merge_size),
      postshuffle_norm_(postshuffle_norm) {
  norm = register_module(
      "norm", torch::nn::LayerNorm(
                  torch::nn::LayerNormOptions({postshuffle_norm ? merged_width_ : config.hidden_size}).eps(1e-6)));
  linear_fc1 = register_module("linear_fc1", torch::nn::Linear(merged_width_, merged_width_));
  linear_fc2 = register_module("linear_fc2", torch::nn::Linear(merged_width_, config.out_hidden_size));
}

torch::Tensor Qwen3PatchMergerImpl::forward(const torch::Tensor& x) {
  const auto normed = (postshuffle_norm_ ? norm(x.view({-1, merged_width_})) : norm(x)).view({-1, merged_width_});
  return apply_linear(linear_fc2, F::gelu(apply_linear(linear_fc1, normed)));  // GELU: exact erf
}

Qwen3VLVisionModelImpl::Qwen3VLVisionModelImpl(const Qwen3VLVisionConfig& config)
    : config_(config), rotary_(config.head_dim() / 2, 10000.0) {
  patch_embed = register_module("patch_embed", std::make_shared<torch::nn::Module>());
  const int64_t tp = config.temporal_patch_size, p = config.patch_size;
  patch_proj = patch_embed->register_module(
      "proj",
      torch::nn::Conv3d(
          torch::nn::Conv3dOptions(config.in_channels, config.hidden_size, {tp, p, p}).stride({tp, p, p}).bias(true)));
  pos_embed = register_module("pos_embed", torch::nn::Embedding(config.num_position_embeddings, config.hidden_size));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.depth; ++i) {
    Qwen3VisionBlock block(config);
    release_parameters(*block);  // deferred_init.hpp: one block at a time
    blocks->push_back(block);
  }
  merger = register_module("merger", Qwen3PatchMerger(config, false));
  deepstack_merger_list = register_module("deepstack_merger_list", torch::nn::ModuleList());
  for (std::size_t i = 0; i < config.deepstack_visual_indexes.size(); ++i)
    deepstack_merger_list->push_back(Qwen3PatchMerger(config, true));
}

torch::Tensor Qwen3VLVisionModelImpl::interpolated_positions(const std::vector<std::array<int64_t, 3>>& grids) const {
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(config_.num_position_embeddings))));
  const int64_t m = config_.spatial_merge_size;
  std::vector<torch::Tensor> index[4], weight[4];
  for (const auto& [t, h, w] : grids) {
    const auto hi = torch::linspace(0, static_cast<double>(side - 1), h),
               wi = torch::linspace(0, static_cast<double>(side - 1), w);
    const auto hf = hi.to(torch::kInt), wf = wi.to(torch::kInt);
    const auto hc = (hf + 1).clamp_max(side - 1), wc = (wf + 1).clamp_max(side - 1);
    const auto dh = hi - hf, dw = wi - wf;
    const auto bh = hf * side, bhc = hc * side;
    const torch::Tensor idx[4] = {
        (bh.unsqueeze(1) + wf.unsqueeze(0)).flatten(), (bh.unsqueeze(1) + wc.unsqueeze(0)).flatten(),
        (bhc.unsqueeze(1) + wf.unsqueeze(0)).flatten(), (bhc.unsqueeze(1) + wc.unsqueeze(0)).flatten()};
    const torch::Tensor wt[4] = {
        ((1 - dh).unsqueeze(1) * (1 - dw).unsqueeze(0)).flatten(), ((1 - dh).unsqueeze(1) * dw.unsqueeze(0)).flatten(),
        (dh.unsqueeze(1) * (1 - dw).unsqueeze(0)).flatten(), (dh.unsqueeze(1) * dw.unsqueeze(0)).flatten()};
    for (int k = 0; k < 4; ++k) {
      index[k].push_back(idx[k].to(torch::kLong));
      weight[k].push_back(wt[k]);
    }
  }
  const auto& table = pos_embed->weight;
  torch::Tensor sum;
  for (int k = 0; k < 4; ++k) {
    const auto term = torch::embedding(table, torch::cat(index[k]).to(table.device())) *
                      torch::cat(weight[k]).to(table.device(), table.scalar_type()).unsqueeze(-1);
    sum = k == 0 ? term : sum + term;
  }
  std::vector<torch::Tensor> per_image;
  int64_t offset = 0;
  for (const auto& [t, h, w] : grids) {
    const auto own = sum.narrow(0, offset, h * w).repeat({t, 1});
    offset += h * w;
    per_image.push_back(own.view({t, h / m, m, w / m, m, -1}).permute({0, 1, 3, 2, 4, 5}).flatten(0, 4));
  }
  return torch::cat(per_image);
}

torch::Tensor Qwen3VLVisionModelImpl::rotary_angles(const std::vector<std::array<int64_t, 3>>& grids) const {
  const int64_t m = config_.spatial_merge_size;
  int64_t max_hw = 0;
  for (const auto& [t, h, w] : grids) max_hw = std::max({max_hw, h, w});
  const auto table = torch::outer(torch::arange(max_hw, torch::kFloat), rotary_.inv_freq());  // (max_hw, d / 4)
  std::vector<torch::Tensor> coords;
  for (const auto& [t, h, w] : grids) {
    const auto block_rows = torch::arange(h / m).view({-1, 1, 1, 1}) * m + torch::arange(m).view({1, 1, -1, 1});
    const auto block_cols = torch::arange(w / m).view({1, -1, 1, 1}) * m + torch::arange(m).view({1, 1, 1, -1});
    const auto rows = block_rows.expand({h / m, w / m, m, m}).reshape({-1});
    const auto cols = block_cols.expand({h / m, w / m, m, m}).reshape({-1});
    coords.push_back(torch::stack({rows, cols}, -1).repeat({t, 1}));
  }
  const auto ids = torch::cat(coords);                                  // (N, 2)
  return table.index_select(0, ids.flatten()).view({ids.size(0), -1});  // [row angles, column angles]
}

namespace {
[[maybe_unused]] const bool kQwen3VisionBlockHookable = register_hookable_module_type("Qwen3VisionBlock");
}  // namespace

Qwen3VisionOutput Qwen3VLVisionModelImpl::forward(const torch::Tensor& pixel_values, const torch::Tensor& grid_thw) {
  const auto grids = grids_of(grid_thw);
  int64_t patches = 0;
  std::vector<int64_t> lengths;
  for (const auto& [t, h, w] : grids) {
    if (h % config_.spatial_merge_size || w % config_.spatial_merge_size)
      throw util::DataError("image_grid_thw: a grid of " + std::to_string(h) + " x " + std::to_string(w) +
                            " patches is not a multiple of the merge size " +
                            std::to_string(config_.spatial_merge_size));
    patches += t * h * w;
    for (int64_t frame = 0; frame < t; ++frame) lengths.push_back(h * w);
  }
  if (pixel_values.dim() != 2 || pixel_values.size(0) != patches || pixel_values.size(1) != config_.patch_values())
    throw util::DataError("pixel_values must be (" + std::to_string(patches) + ", " +
                          std::to_string(config_.patch_values()) + ") for image_grid_thw, got " +
                          c10::str(pixel_values.sizes()));
  const auto& weight = patch_proj->weight;
  auto h = patch_proj(
               pixel_values
                   .view({-1, config_.in_channels, config_.temporal_patch_size, config_.patch_size, config_.patch_size})
                   .to(weight.scalar_type()))
               .view({-1, config_.hidden_size});
  h = h + interpolated_positions(grids).to(h.device());
  const auto angles = rotary_angles(grids).to(h.device());
  const auto emb = torch::cat({angles, angles}, -1);
  const auto cos = emb.cos(), sin = emb.sin();
  Qwen3VisionOutput out;
  const bool checkpointed = gradient_checkpointing && torch::GradMode::is_enabled();
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    auto block = blocks->ptr<Qwen3VisionBlockImpl>(i);
    auto run = [&]() -> torch::Tensor {
      if (!checkpointed) return block->forward(h, cos, sin, lengths);
      auto body = [block, lengths](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{block->forward(in[0], in[1], in[2], lengths)};
      };
      return checkpoint(body, {h, cos, sin}, trainable_parameters({block.get()}))[0];
    };
    // Between the block's hooks (forward_hooks.hpp): FSDP gathers a block that is a unit.
    h = hooked_forward(*block, {h}, run);
    const auto& taps = config_.deepstack_visual_indexes;
    auto tap = std::find(taps.begin(), taps.end(), static_cast<int64_t>(i));
    if (tap != taps.end())
      out.deepstack.push_back(
          deepstack_merger_list->ptr<Qwen3PatchMergerImpl>(static_cast<std::size_t>(tap - taps.begin()))->forward(h));
  }
  out.merged = merger(h);
  return out;
}

}  // namespace lrhost::nn
