// Fuzz target: policy_preprocessor.json (PolicyProcessors::load), the pipeline file a pretrained
// policy folder carries. The postprocessor file next to it is a fixed valid one, so that the fuzzed
// preprocessor decides how far loading gets; the normalizer's state file is the seed's, so that a
// mutated normalizer step still reaches the stats.
#include <torch/types.h>

#include "host/io/safetensors.hpp"
#include "host/policy/processors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {
const char* kPostprocessor = R"({"name": "policy_postprocessor", "steps": [
 {"registry_name": "unnormalizer_processor", "config": {"eps": 1e-08,
  "features": {"action": {"type": "ACTION", "shape": [2]}}, "norm_map": {"ACTION": "MIN_MAX"}}},
 {"registry_name": "device_processor", "config": {"device": "cpu", "float_dtype": null}}]})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto& dir = fuzz::scratch();
  static const bool prepared = [&] {
    const std::string post = kPostprocessor;
    fuzz::write_bytes(dir / policy::kPostprocessorFile, reinterpret_cast<const uint8_t*>(post.data()), post.size());
    io::write_safetensors(dir / "policy_preprocessor_step_3_normalizer_processor.safetensors",
                          {{"observation.state.mean", torch::zeros({3})},
                           {"observation.state.std", torch::ones({3})},
                           {"action.min", torch::full({2}, -1.0)},
                           {"action.max", torch::ones({2})}});
    return true;
  }();
  (void)prepared;
  fuzz::write_bytes(dir / policy::kPreprocessorFile, data, size);
  fuzz::expect_clean([&] { (void)policy::PolicyProcessors::load(dir); });
  return 0;
}
