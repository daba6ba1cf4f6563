// Lua binding of the module-level tensor functions: creation (lr.tensor, zeros, ones, full, rand,
// randn, arange, eye, randint, randperm), combination (cat, stack, where, matmul) and the loss
// functions of lr.nn (l1_loss, mse_loss, smooth_l1_loss, cross_entropy, binary_cross_entropy_with_logits).
#include "bindings/module.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/nn/dropout.hpp"

namespace lrhost::bindings {
namespace {

// Walks nested Lua tables: records the shape from the first elements and collects values,
// checking that every row has the same length.
struct NestedData {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool booleans = false;
  bool numbers = false;
};

void collect(lua_State* L, int index, std::size_t depth, NestedData& data) {
  int type = lua_type(L, index);
  if (type == LUA_TNUMBER || type == LUA_TBOOLEAN) {
    if (depth != data.shape.size()) throw LxArgError(1, "ragged nested table: rows have different depths");
    (type == LUA_TNUMBER ? data.numbers : data.booleans) = true;
    data.values.push_back(type == LUA_TNUMBER ? lua_tonumber(L, index) : (lua_toboolean(L, index) ? 1.0 : 0.0));
    return;
  }
  if (type != LUA_TTABLE)
    throw LxArgError(1, "nested tables may hold only numbers or booleans, found a " + lx_typename(L, index));
  // One stack slot per nesting level; deep nesting would outgrow the 20 slots a C function gets.
  if (!lua_checkstack(L, 2)) throw LxArgError(1, "nested table too deep");
  auto length = static_cast<int64_t>(lua_objlen(L, index));
  if (length == 0) {  // an empty list, or a table with only named keys (lr.tensor{dtype=...} forgot the data)
    lua_pushnil(L);
    if (lua_next(L, index) != 0) {
      std::string key = lua_type(L, -2) == LUA_TSTRING ? "'" + std::string(lua_tostring(L, -2)) + "'"
                                                       : "of type " + lx_typename(L, -2);
      lua_pop(L, 2);
      throw LxArgError(1, "nested tables must be lists of numbers or booleans, found a key " + key);
    }
  }
  if (depth == data.shape.size()) {
    if (!data.values.empty()) throw LxArgError(1, "ragged nested table: rows have different depths");
    data.shape.push_back(length);
  } else if (depth > data.shape.size() || data.shape[depth] != length) {
    throw LxArgError(1, "ragged nested table: a row at depth " + std::to_string(depth + 1) + " has " +
                            std::to_string(length) + " entries, expected " +
                            (depth < data.shape.size() ? std::to_string(data.shape[depth]) : std::string("none")));
  }
  for (int64_t i = 1; i <= length; ++i) {
    lua_rawgeti(L, index, static_cast<int>(i));
    collect(L, lua_gettop(L), depth + 1, data);
    lua_pop(L, 1);
  }
}

int w_tensor(lua_State* L) {
  return lx_guard(L, "lr.tensor", [&] {
    // A number or boolean gives a 0-dim tensor.
    if (lua_type(L, 1) != LUA_TNUMBER && lua_type(L, 1) != LUA_TBOOLEAN)
      lx_check_table(L, 1, "number, boolean or nested table of numbers");
    NestedData data;
    collect(L, 1, 0, data);
    if (data.booleans && data.numbers) throw LxArgError(1, "mixes numbers and booleans");
    auto options = check_tensor_options(L, 2);
    if (data.booleans && !has_option(L, 2, "dtype")) options = options.dtype(torch::kBool);
    auto values = torch::tensor(data.values, torch::kFloat64).reshape(data.shape);
    push_tensor(L, values.to(options.device(), c10::typeMetaToScalarType(options.dtype()))
                       .requires_grad_(options.requires_grad()));
    return 1;
  });
}

// lr.zeros(2, 3 [, opts]) or lr.zeros({2, 3} [, opts]); same for ones, rand, randn.
template <int Kind>
int w_filled(lua_State* L) {
  static const char* names[] = {"lr.zeros", "lr.ones", "lr.rand", "lr.randn"};
  return lx_guard(L, names[Kind], [&] {
    int next = 0;
    auto shape = check_shape(L, 1, &next);
    auto options = check_tensor_options(L, next);
    if (!lua_isnone(L, next + 1)) throw LxArgError(next + 1, "unexpected extra argument");
    torch::Tensor t = Kind == 0   ? torch::zeros(shape, options)
                      : Kind == 1 ? torch::ones(shape, options)
                      : Kind == 2 ? torch::rand(shape, options)
                                  : torch::randn(shape, options);
    push_tensor(L, t);
    return 1;
  });
}

// lr.full({2, 3}, value [, opts]) or lr.full(2, 3, value [, opts]): with integer sizes, the last
// number is the fill value.
int w_full(lua_State* L) {
  return lx_guard(L, "lr.full", [&] {
    int next = 0;
    std::vector<int64_t> shape;
    if (lua_type(L, 1) == LUA_TNUMBER) {
      while (lua_type(L, next + 2) == LUA_TNUMBER) ++next;  // next + 1: index of the last number
      for (int i = 1; i <= next; ++i) shape.push_back(lx_check_integer(L, i));
      if (next == 0) throw LxArgError(2, "expected fill value (number), got " + lx_typename(L, 2));
      next += 1;
    } else {
      shape = check_shape(L, 1, &next);
    }
    double value = lx_check_number(L, next);
    push_tensor(L, torch::full(shape, value, check_tensor_options(L, next + 1)));
    return 1;
  });
}

// lr.arange(stop) | lr.arange(start, stop [, step]) [, opts]
int w_arange(lua_State* L) {
  return lx_guard(L, "lr.arange", [&] {
    double start = 0, stop = 0, step = 1;
    int options_at = 2;
    if (lua_type(L, 2) == LUA_TNUMBER) {
      start = lx_check_number(L, 1);
      stop = lx_check_number(L, 2);
      options_at = 3;
      if (lua_type(L, 3) == LUA_TNUMBER) {
        step = lx_check_number(L, 3);
        options_at = 4;
      }
    } else {
      stop = lx_check_number(L, 1);
    }
    if (step == 0) throw LxArgError(3, "step must not be 0");
    push_tensor(L, torch::arange(start, stop, step, check_tensor_options(L, options_at)));
    return 1;
  });
}

// lr.eye(n [, m] [, opts])
int w_eye(lua_State* L) {
  return lx_guard(L, "lr.eye", [&] {
    int64_t n = lx_check_integer(L, 1);
    if (lua_type(L, 2) == LUA_TNUMBER) {
      push_tensor(L, torch::eye(n, lx_check_integer(L, 2), check_tensor_options(L, 3)));
    } else {
      push_tensor(L, torch::eye(n, check_tensor_options(L, 2)));
    }
    return 1;
  });
}

// Options at `index` whose dtype defaults to int64 instead of float32.
torch::TensorOptions check_index_options(lua_State* L, int index) {
  auto options = check_tensor_options(L, index);
  return has_option(L, index, "dtype") ? options : options.dtype(torch::kLong);
}

// lr.randint(low, high, shape [, opts]) -> int64 by default
int w_randint(lua_State* L) {
  return lx_guard(L, "lr.randint", [&] {
    int64_t low = lx_check_integer(L, 1);
    int64_t high = lx_check_integer(L, 2);
    if (high <= low) throw LxArgError(2, "high must be greater than low");
    int next = 0;
    auto shape = check_shape(L, 3, &next);
    push_tensor(L, torch::randint(low, high, shape, check_index_options(L, next)));
    return 1;
  });
}

// lr.randperm(n [, opts]) -> int64 by default
int w_randperm(lua_State* L) {
  return lx_guard(L, "lr.randperm", [&] {
    int64_t n = lx_check_integer(L, 1);
    if (n < 0) throw LxArgError(1, "n must be >= 0");
    push_tensor(L, torch::randperm(n, check_index_options(L, 2)));
    return 1;
  });
}

std::vector<torch::Tensor> check_tensor_list(lua_State* L, int index) {
  lx_check_table(L, index, "list of Tensors");
  std::vector<torch::Tensor> tensors;
  auto n = static_cast<int>(lua_objlen(L, index));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    Proxy* proxy = lx_to_proxy(L, -1, LxTraits<torch::Tensor>::type);
    if (proxy == nullptr || !proxy->object) {
      std::string problem = proxy == nullptr ? "is a " + lx_typename(L, -1) + ", expected Tensor"
                                             : "is a Tensor that was released; it cannot be used after :release()";
      lua_pop(L, 1);
      throw LxArgError(index, "entry " + std::to_string(i) + " " + problem);
    }
    tensors.push_back(*std::static_pointer_cast<torch::Tensor>(proxy->object));
    lua_pop(L, 1);
  }
  if (tensors.empty()) throw LxArgError(index, "expected a non-empty list of Tensors");
  return tensors;
}

template <bool Stack>
int w_join(lua_State* L) {
  return lx_guard(L, Stack ? "lr.stack" : "lr.cat", [&] {
    auto tensors = check_tensor_list(L, 1);
    int64_t dim = lx_opt_integer(L, 2).value_or(0);
    push_tensor(L, Stack ? torch::stack(tensors, dim) : torch::cat(tensors, dim));
    return 1;
  });
}

int w_where(lua_State* L) {
  return lx_guard(L, "lr.where", [&] {
    auto condition = check_tensor(L, 1).to(torch::kBool);
    // Numbers take the device of the condition; they promote like Python scalars.
    push_tensor(
        L, torch::where(condition, check_tensor_or_number(L, 2, condition), check_tensor_or_number(L, 3, condition)));
    return 1;
  });
}

int w_matmul(lua_State* L) {
  return lx_guard(L, "lr.matmul", [&] {
    push_tensor(L, torch::matmul(check_tensor(L, 1), check_tensor(L, 2)));
    return 1;
  });
}

// Losses: (input, target [, reduction]) with reduction 'mean' | 'sum' | 'none'.
torch::Reduction::Reduction check_reduction(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return torch::Reduction::Mean;
  auto name = lx_check_enum(L, index, {"mean", "sum", "none"});
  return name == "mean" ? torch::Reduction::Mean : name == "sum" ? torch::Reduction::Sum : torch::Reduction::None;
}

template <int Kind>
int w_loss(lua_State* L) {
  static const char* names[] = {"lr.nn.l1_loss", "lr.nn.mse_loss", "lr.nn.smooth_l1_loss",
                                "lr.nn.binary_cross_entropy_with_logits"};
  return lx_guard(L, names[Kind], [&] {
    auto& input = check_tensor(L, 1);
    auto& target = check_tensor(L, 2);
    if (input.sizes() != target.sizes())
      throw LxArgError(
          2, "target shape " + c10::str(target.sizes()) + " differs from input shape " + c10::str(input.sizes()));
    auto reduction = check_reduction(L, 3);
    auto t = target.to(input.dtype());
    push_tensor(L, Kind == 0   ? torch::l1_loss(input, t, reduction)
                   : Kind == 1 ? torch::mse_loss(input, t, reduction)
                   : Kind == 2 ? torch::smooth_l1_loss(input, t, reduction)
                               : torch::binary_cross_entropy_with_logits(input, t, {}, {}, reduction));
    return 1;
  });
}

// cross_entropy(logits [N, C], classes [N] int64 with 0-based class ids [, reduction])
int w_cross_entropy(lua_State* L) {
  return lx_guard(L, "lr.nn.cross_entropy", [&] {
    auto& logits = check_tensor(L, 1);
    auto& target = check_tensor(L, 2);
    auto reduction = check_reduction(L, 3);
    if (target.is_floating_point() && target.sizes() != logits.sizes())
      throw LxArgError(2, "expected class indices (int64, shape [N]) or class probabilities shaped like the logits");
    auto classes = target.is_floating_point() ? target : target.to(torch::kLong);
    push_tensor(L, torch::nn::functional::cross_entropy(
                       logits, classes,
                       torch::nn::functional::CrossEntropyFuncOptions().reduction(
                           reduction == torch::Reduction::Mean
                               ? torch::nn::functional::CrossEntropyFuncOptions::reduction_t(torch::kMean)
                           : reduction == torch::Reduction::Sum
                               ? torch::nn::functional::CrossEntropyFuncOptions::reduction_t(torch::kSum)
                               : torch::nn::functional::CrossEntropyFuncOptions::reduction_t(torch::kNone))));
    return 1;
  });
}

int w_dropout(lua_State* L) {
  return lx_guard(L, "lr.nn.dropout", [&] {
    double p = lx_check_number(L, 2);
    if (p < 0 || p > 1) throw LxArgError(2, "p must be in [0, 1]");
    push_tensor(L, nn::dropout(check_tensor(L, 1), p, lx_opt_boolean(L, 3).value_or(true)));
    return 1;
  });
}

}  // namespace

void open_tensor_functions(lua_State* L, int module) {
  const luaL_Reg functions[] = {{"tensor", w_tensor},     {"zeros", w_filled<0>}, {"ones", w_filled<1>},
                                {"rand", w_filled<2>},    {"randn", w_filled<3>}, {"full", w_full},
                                {"arange", w_arange},     {"eye", w_eye},         {"randint", w_randint},
                                {"randperm", w_randperm}, {"cat", w_join<false>}, {"stack", w_join<true>},
                                {"where", w_where},       {"matmul", w_matmul},   {nullptr, nullptr}};
  lx_set_functions(L, module, functions);
  lua_getfield(L, module, "nn");
  const luaL_Reg nn[] = {{"l1_loss", w_loss<0>},
                         {"mse_loss", w_loss<1>},
                         {"smooth_l1_loss", w_loss<2>},
                         {"binary_cross_entropy_with_logits", w_loss<3>},
                         {"cross_entropy", w_cross_entropy},
                         {"dropout", w_dropout},
                         {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), nn);
  lua_pop(L, 1);
}

}  // namespace lrhost::bindings
