// Fuzz target: the safetensors reader (header length, JSON header, dtypes, shapes, offsets). The
// bytes go through both entry points: parse_safetensors in memory and read_safetensors from a file
// (the memory-mapped path checkpoints and pretrained weights take).
#include <torch/types.h>

#include "host/io/safetensors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  fuzz::expect_clean([&] {
    auto content = io::parse_safetensors(data, size, "fuzz input");
    // Touch every byte handed out, so a tensor that overran the buffer shows up under ASan.
    for (const auto& [name, tensor] : content.tensors) (void)tensor.sum();
  });
  const auto file = fuzz::scratch() / "model.safetensors";
  fuzz::write_bytes(file, data, size);
  fuzz::expect_clean([&] {
    auto content = io::read_safetensors(file);
    for (const auto& [name, tensor] : content.tensors) (void)tensor.sum();
  });
  return 0;
}
