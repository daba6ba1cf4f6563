// Shared pieces of the Tensor binding, used by every wrap file that passes tensors to or from Lua.
#pragma once
#include <torch/torch.h>
#include <map>
#include <string>

#include "bindings/runtime.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<torch::Tensor> {
  static constexpr LxType type{"Tensor", "lrhost.Tensor"};
};

inline void push_tensor(lua_State* L, torch::Tensor tensor) {
  lx_push(L, std::make_shared<torch::Tensor>(std::move(tensor)));
}

inline torch::Tensor& check_tensor(lua_State* L, int index) {
  return lx_check<torch::Tensor>(L, index);
}

// A Lua number as a 0-dim tensor on `device` that promotes like a Python scalar in PyTorch
// (int64 when integral, else float64; marked as a wrapped number, so it never widens a tensor's dtype
// within its category: float32 + 2 is float32, int64 * 2 is int64, int64 + 0.5 is float32).
torch::Tensor number_tensor(double value, const c10::Device& device);

// A tensor argument, or a number turned into number_tensor on `like`'s device.
torch::Tensor check_tensor_or_number(lua_State* L, int index, const torch::Tensor& like);

// Whether the options table at `index` (if it is a table) has a non-nil `key`.
bool has_option(lua_State* L, int index, const char* key);

// Options table {dtype=, device=, requires_grad=} at `index` (absent/nil: defaults, float32 on cpu).
torch::TensorOptions check_tensor_options(lua_State* L, int index);

// A shape given as a table {2, 3} or as integers from `first` up to the first non-number
// (anything else at `first` is an error); `next` receives the stack index after the shape.
std::vector<int64_t> check_shape(lua_State* L, int first, int* next);

// A batch: a Lua table {name = Tensor} (string values, e.g. task text, are skipped) and back.
std::map<std::string, torch::Tensor> check_batch(lua_State* L, int index);
void push_batch(lua_State* L, std::map<std::string, torch::Tensor> batch);

// A dimension index (PyTorch rules: 0-based, negative counts from the end), checked against `t`.
int64_t check_dim(lua_State* L, int index, const torch::Tensor& t);

// Registers the functions of lr.* and lr.nn.* that create or combine tensors.
void open_tensor_functions(lua_State* L, int module);

}  // namespace lrhost::bindings
