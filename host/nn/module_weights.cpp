// Strict safetensors -> module loading; see module_weights.hpp.
#include "host/nn/module_weights.hpp"

#include <torch/torch.h>

#include <map>
#include <set>

#include "host/util/error.hpp"

namespace lrhost::nn {

namespace {

std::vector<std::pair<std::string, torch::Tensor>> named_tensors(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  return out;
}

std::string shape_text(c10::IntArrayRef sizes) {
  return c10::str(sizes);
}

}  // namespace

void load_module_weights(torch::nn::Module& module, const io::SafetensorsContent& content, const std::string& file,
                         const WeightLoadOptions& options) {
  const std::set<std::string> skip(options.skip.begin(), options.skip.end());
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : named_tensors(module)) {
    if (skip.count(name)) continue;
    const std::string key = options.prefix + name;
    const torch::Tensor* source = content.find(key);
    if (!source)
      throw util::DataError(file + ": missing weight '" + key + "' (expected shape " + shape_text(target.sizes()) +
                            ")");
    if (source->sizes() != target.sizes())
      throw util::DataError(file + ": weight '" + key + "' has shape " + shape_text(source->sizes()) + ", expected " +
                            shape_text(target.sizes()));
    target.copy_(*source);
    used.insert(key);
  }
  if (options.allow_unused_under_prefix) return;
  std::vector<std::string> extra;
  for (const auto& [key, tensor] : content.tensors)
    if (key.rfind(options.prefix, 0) == 0 && !used.count(key) && !skip.count(key.substr(options.prefix.size())))
      extra.push_back(key);
  if (!extra.empty()) {
    std::string list;
    for (std::size_t i = 0; i < extra.size() && i < 10; ++i) list += (i ? ", '" : "'") + extra[i] + "'";
    if (extra.size() > 10) list += ", ... (" + std::to_string(extra.size()) + " in all)";
    throw util::DataError(file + ": unexpected weights under '" + options.prefix +
                          "' that the module does not have: " + list);
  }
}

void load_module_weights(torch::nn::Module& module, const std::filesystem::path& file,
                         const WeightLoadOptions& options) {
  load_module_weights(module, io::read_safetensors(file), file.string(), options);
}

std::vector<WeightRow> weight_table(const torch::nn::Module& module, const std::string& prefix) {
  std::vector<WeightRow> rows;
  for (const auto& [name, tensor] : named_tensors(module))
    rows.push_back({prefix + name, tensor.sizes().vec(), tensor.scalar_type()});
  return rows;
}

}  // namespace lrhost::nn
