// Benchmark: forward of a full-size SigLIP vision tower + pixel-shuffle connector (SmolVLM2-500M's
// sizes: 512x512 images, 12 layers of width 768, scale 4 -> 960) on CPU with random weights, in eval
// mode without gradients, the work SmolVLA does per camera. tests/bench/siglip_forward.py times
// transformers' modules the same way; `scripts/bench siglip` runs both.
//
//   lrhost_siglip_bench [--threads N] [--batch B] [--iters K] [--warmup W]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "host/nn/pixel_shuffle_connector.hpp"
#include "host/nn/siglip_config.hpp"
#include "host/nn/siglip_vision.hpp"

using namespace lrhost;

int main(int argc, char** argv) {
  int threads = 2, batch = 1, iters = 3, warmup = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::stoi(argv[i + 1]);
    if (flag == "--threads")
      threads = value;
    else if (flag == "--batch")
      batch = value;
    else if (flag == "--iters")
      iters = value;
    else if (flag == "--warmup")
      warmup = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  const auto config = nn::SiglipVisionConfig::from_json({{"hidden_size", 768},
                                                         {"intermediate_size", 3072},
                                                         {"num_hidden_layers", 12},
                                                         {"num_attention_heads", 12},
                                                         {"image_size", 512},
                                                         {"patch_size", 16}},
                                                        "bench vision_config");
  nn::SiglipVisionTransformer vision(config);
  nn::PixelShuffleConnector connector(config.hidden_size, 960, 4);
  vision->eval();
  connector->eval();
  // Frozen, as SmolVLA keeps its vision tower.
  for (auto& parameter : vision->parameters()) parameter.set_requires_grad(false);
  for (auto& parameter : connector->parameters()) parameter.set_requires_grad(false);
  torch::NoGradGuard no_grad;
  const auto pixels = torch::rand({batch, 3, 512, 512}) * 2 - 1;
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto tokens = connector->forward(vision->forward(pixels));
    const auto stop = std::chrono::steady_clock::now();
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    if (tokens.size(1) != 64) return 1;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("lrhost siglip+connector forward: batch %d, %d threads: median %.0f ms, best %.0f ms (%d iters)\n", batch,
              threads, ms[ms.size() / 2], ms.front(), iters);
  return 0;
}
