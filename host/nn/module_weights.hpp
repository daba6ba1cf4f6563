// Strict loading of a torch::nn::Module's parameters and buffers from a safetensors file written by
// Hugging Face transformers (or LeRobot): every tensor of the module under a key prefix must be in
// the file with the same shape, and, unless the caller says otherwise, nothing else may sit under
// that prefix. Dtypes may differ (bf16 files into fp32 modules and back): values are converted,
// the module keeps its own dtype. Errors name the file, the key and what was expected.
#pragma once
#include <torch/nn/module.h>

#include <filesystem>
#include <string>
#include <vector>

#include "host/io/safetensors.hpp"

namespace lrhost::nn {

struct WeightLoadOptions {
  std::string prefix;                      // e.g. "model.vision_model." (joined to module names as is)
  bool allow_unused_under_prefix = false;  // keys under the prefix the module does not have
  std::vector<std::string> skip;           // module keys (without prefix) not read from the file
};

// One named tensor of a module as a (key, shape, dtype) row, for key tables and plans.
struct WeightRow {
  std::string key;
  std::vector<int64_t> shape;
  c10::ScalarType dtype;
};

// Copies the file's tensors into `module` (parameters and buffers, recursively). `file` is used in
// messages only. Throws util::DataError naming the first missing/misshaped key and listing extras.
void load_module_weights(torch::nn::Module& module, const io::SafetensorsContent& content, const std::string& file,
                         const WeightLoadOptions& options = {});
void load_module_weights(torch::nn::Module& module, const std::filesystem::path& file,
                         const WeightLoadOptions& options = {});

// The module's parameters then buffers, with `prefix` prepended, in registration order.
std::vector<WeightRow> weight_table(const torch::nn::Module& module, const std::string& prefix = {});

}  // namespace lrhost::nn
