// Mapping between dtype/device names and LibTorch values.
#include "host/util/torch_names.hpp"

#include <torch/cuda.h>

#include <map>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::util {
namespace {
const std::map<std::string, c10::ScalarType>& dtype_table() {
  static const std::map<std::string, c10::ScalarType> table{
      {"float32", c10::kFloat}, {"float", c10::kFloat}, {"float64", c10::kDouble},    {"double", c10::kDouble},
      {"float16", c10::kHalf},  {"half", c10::kHalf},   {"bfloat16", c10::kBFloat16}, {"int64", c10::kLong},
      {"long", c10::kLong},     {"int32", c10::kInt},   {"int", c10::kInt},           {"int16", c10::kShort},
      {"int8", c10::kChar},     {"uint8", c10::kByte},  {"bool", c10::kBool}};
  return table;
}
}  // namespace

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names{"float32", "float64", "float16", "bfloat16", "int64",
                                              "int32",   "int16",   "int8",    "uint8",    "bool",
                                              "float",   "double",  "half",    "long",     "int"};
  return names;
}

c10::ScalarType parse_dtype(const std::string& name) {
  auto found = dtype_table().find(name);
  if (found == dtype_table().end())
    throw ConfigError("unknown dtype '" + name + "'", "valid dtypes: " + quoted_list(dtype_names()));
  return found->second;
}

std::string dtype_name(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat:
      return "float32";
    case c10::kDouble:
      return "float64";
    case c10::kHalf:
      return "float16";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kLong:
      return "int64";
    case c10::kInt:
      return "int32";
    case c10::kShort:
      return "int16";
    case c10::kChar:
      return "int8";
    case c10::kByte:
      return "uint8";
    case c10::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

c10::Device parse_device(const std::string& name) {
  if (name != "cpu" && name != "cuda" && name.rfind("cuda:", 0) != 0)
    throw ConfigError("unknown device '" + name + "'", "valid devices: 'cpu', 'cuda', 'cuda:N'");
  c10::Device device = [&] {
    try {
      return c10::Device(name);
    } catch (const c10::Error&) {
      throw ConfigError("malformed device '" + name + "'", "write 'cuda:N' with a GPU index N");
    }
  }();
  if (device.is_cuda()) {
    auto count = torch::cuda::device_count();
    if (count == 0) throw ConfigError("device '" + name + "' requested but no GPU is available", "use device 'cpu'");
    if (device.has_index() && device.index() >= static_cast<int>(count))
      throw ConfigError("device '" + name + "' does not exist; this machine has " + std::to_string(count) + " GPU(s)");
  }
  return device;
}

std::string device_name(const c10::Device& device) {
  return device.str();
}

}  // namespace lrhost::util
