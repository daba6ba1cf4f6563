// Names of LibTorch dtypes and devices as recipes and config files write them ("float32",
// "bfloat16", "cuda:1"), in both directions, with errors that list the valid names.
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

namespace lrhost::util {

c10::ScalarType parse_dtype(const std::string& name);
std::string dtype_name(c10::ScalarType type);
const std::vector<std::string>& dtype_names();

// "cpu", "cuda", "cuda:N"; a CUDA device on a machine without one is an error with a hint.
c10::Device parse_device(const std::string& name);
std::string device_name(const c10::Device& device);

}  // namespace lrhost::util
