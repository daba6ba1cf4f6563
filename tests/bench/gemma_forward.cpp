// Benchmark: forward of pi0/pi05's PaliGemma blocks at full size on CPU with random weights, eval,
// no gradients, frozen weights: (a) one Gemma-2B decoder layer (8 query heads x 256, 1 KV head, MLP
// 16384) on a 304-token prefix (pi0, one camera: 256 image + 48 text tokens) with pi0's additive
// mask and eager attention; (b) SigLIP So400m/14 at 224 (27 layers, width 1152) + the projector to
// 2048. tests/bench/gemma_forward.py times LeRobot's PiGemma layer and transformers' SigLIP the same
// way; `scripts/bench gemma` runs both.
//
//   lrhost_gemma_bench [--threads N] [--batch B] [--iters K] [--warmup W] [--tokens T]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "host/nn/gemma_decoder_layer.hpp"
#include "host/nn/paligemma_model.hpp"

using namespace lrhost;

namespace {

void freeze(torch::nn::Module& module) {
  module.eval();
  for (auto& parameter : module.parameters()) parameter.set_requires_grad(false);
}

void time_it(const char* what, int batch, int threads, int warmup, int iters, const std::function<void()>& body) {
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    const auto stop = std::chrono::steady_clock::now();
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("lrhost %s: batch %d, %d threads: median %.0f ms, best %.0f ms (%d iters)\n", what, batch, threads,
              ms[ms.size() / 2], ms.front(), iters);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, batch = 1, iters = 3, warmup = 1, tokens = 304;
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
    else if (flag == "--tokens")
      tokens = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  const auto config = nn::PaliGemmaConfig::so400m_gemma_2b();
  {
    nn::GemmaDecoderLayer layer(config.text);
    freeze(*layer);
    const auto x = torch::randn({batch, tokens, config.text.hidden_size});
    const auto positions = torch::arange(tokens).unsqueeze(0).repeat({batch, 1});
    const auto mask = nn::additive_attention_mask(torch::ones({batch, tokens, tokens}, torch::kBool));
    nn::LlamaRotaryEmbedding rotary(config.text.head_dim, config.text.rope_theta);
    time_it(("gemma-2b layer forward, " + std::to_string(tokens) + " tokens").c_str(), batch, threads, warmup, iters,
            [&] { layer->forward(x, rotary.tables(positions, torch::kFloat32), mask); });
  }
  {
    nn::SiglipVisionModel tower(config.vision);
    nn::PaliGemmaProjector projector(config.vision.hidden_size, config.projection_dim);
    freeze(*tower);
    freeze(*projector);
    const auto pixels = torch::rand({batch, 3, 224, 224}) * 2 - 1;
    time_it("siglip so400m/14 224 + projector forward", batch, threads, warmup, iters, [&] {
      if (projector->forward(tower->forward(pixels)).size(1) != 256) std::abort();
    });
  }
  return 0;
}
