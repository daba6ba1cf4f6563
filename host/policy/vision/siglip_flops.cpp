// SigLIP tower FLOPs; see siglip_flops.hpp. Per layer: q, k, v and out projections, the attention's
// two activation products over all patches, and the MLP (fc1, fc2).
#include "host/policy/vision/siglip_flops.hpp"

namespace lrhost::policy::vision {

int64_t count_siglip_flops(TrainingFlops& flops, const nn::SiglipVisionConfig& vision, bool trains, bool checkpointed) {
  const int64_t side = vision.image_size / vision.patch_size;
  const double patches = static_cast<double>(side * side);
  const double width = static_cast<double>(vision.hidden_size);
  const double head = width / static_cast<double>(vision.num_attention_heads);
  const double intermediate = static_cast<double>(vision.intermediate_size);
  flops.matmul(patches, static_cast<double>(vision.num_channels * vision.patch_size * vision.patch_size), width, trains,
               false);  // the patch embedding, a strided convolution over the pixels
  for (int64_t layer = 0; layer < vision.num_hidden_layers; ++layer) {
    for (int projection = 0; projection < 4; ++projection)  // q, k, v, out
      flops.matmul(patches, width, width, trains, trains, checkpointed);
    const double rows = static_cast<double>(vision.num_attention_heads) * patches;
    flops.activation_matmul(rows, head, patches, trains, checkpointed);
    flops.activation_matmul(rows, patches, head, trains, checkpointed);
    flops.matmul(patches, width, intermediate, trains, trains, checkpointed);
    flops.matmul(patches, intermediate, width, trains, trains, checkpointed);
  }
  return side * side;
}

}  // namespace lrhost::policy::vision
