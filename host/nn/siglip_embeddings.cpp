// SigLIP patch + position embeddings (see siglip_embeddings.hpp).
#include "host/nn/siglip_embeddings.hpp"

#include "host/util/error.hpp"

namespace lrhost::nn {

SiglipVisionEmbeddingsImpl::SiglipVisionEmbeddingsImpl(const SiglipVisionConfig& config) : config_(config) {
  config_.validate("SigLIP vision embeddings");
  patch_embedding = register_module(
      "patch_embedding",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(config.num_channels, config.hidden_size, config.patch_size)
                            .stride(config.patch_size)
                            .padding(0)));
  position_embedding =
      register_module("position_embedding", torch::nn::Embedding(config.num_patches(), config.hidden_size));
}

torch::Tensor SiglipVisionEmbeddingsImpl::position_ids(int64_t patches_h, int64_t patches_w,
                                                       c10::ScalarType coord_dtype, const torch::Device& device) const {
  // modeling_smolvlm.py SmolVLMVisionEmbeddings.forward, step for step with the same ops and dtypes
  // (float32 coordinates, clamped below 1, rounded to the pixel dtype, bucketized against float32
  // boundaries), reduced to one image since every image of the batch has the same full grid.
  const int64_t side = config_.patches_per_side();
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const auto boundaries = torch::arange(1.0 / static_cast<double>(side), 1.0, 1.0 / static_cast<double>(side), f32);
  auto bucket = [&](int64_t count) {
    // Python's `1.0 / int64 tensor` is reciprocal() (float32) times 1.0.
    const auto step = torch::full({1}, count, torch::TensorOptions().dtype(torch::kLong).device(device)).reciprocal();
    auto coords = torch::arange(count, f32) * step;
    coords = torch::clamp_max(coords, 1.0 - 1e-6).to(coord_dtype);
    return torch::bucketize(coords, boundaries, /*out_int32=*/false, /*right=*/true);
  };
  return (bucket(patches_h).unsqueeze(1) * side + bucket(patches_w).unsqueeze(0)).reshape({-1});
}

torch::Tensor SiglipVisionEmbeddingsImpl::forward(const torch::Tensor& pixel_values) {
  if (pixel_values.dim() != 4 || pixel_values.size(1) != config_.num_channels)
    throw util::Error("SigLIP vision embeddings: expected pixel values (B, " + std::to_string(config_.num_channels) +
                      ", H, W), got " + c10::str(pixel_values.sizes()));
  const int64_t patches_h = pixel_values.size(2) / config_.patch_size;
  const int64_t patches_w = pixel_values.size(3) / config_.patch_size;
  if (patches_h == 0 || patches_w == 0)
    throw util::Error("SigLIP vision embeddings: image " + c10::str(pixel_values.sizes()) +
                      " is smaller than one patch (" + std::to_string(config_.patch_size) + " pixels)");
  const auto& weight = patch_embedding->weight;
  const auto pixels = pixel_values.to(weight.device(), weight.scalar_type());
  auto embeddings = patch_embedding->forward(pixels).flatten(2).transpose(1, 2);
  const auto ids = position_ids(patches_h, patches_w, pixels.scalar_type(), pixels.device());
  return embeddings + position_embedding->forward(ids).unsqueeze(0);
}

}  // namespace lrhost::nn
