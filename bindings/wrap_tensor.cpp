// Lua binding of the Tensor type: properties (shape, dtype, device, grad), conversions, arithmetic
// through operator metamethods, comparisons, reductions, shape ops, slicing and indexing, autograd.
// Semantics are PyTorch's (0-based dims and indices, negative from the end, broadcasting), so code
// ported from Python means the same thing here. Creation functions live in wrap_tensor_functions.cpp.
#include "bindings/wrap_tensor.hpp"

#include <cmath>
#include <sstream>

#include "bindings/module.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::bindings {

torch::Tensor number_tensor(double value, const c10::Device& device) {
  // An integral value becomes an int64 scalar, any other a float64 one; marked as a "wrapped
  // number" (what PyTorch does with Python scalars), it takes part in type promotion at the lowest
  // priority: float32 + 2 stays float32, int64 * 2 stays int64, int64 + 0.5 becomes float32.
  bool integral = std::isfinite(value) && std::floor(value) == value && std::fabs(value) <= 9.0e15;
  auto options = torch::TensorOptions().device(device);
  torch::Tensor t = integral ? torch::scalar_tensor(static_cast<int64_t>(value), options.dtype(torch::kLong))
                             : torch::scalar_tensor(value, options.dtype(torch::kDouble));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

torch::Tensor check_tensor_or_number(lua_State* L, int index, const torch::Tensor& like) {
  if (lua_type(L, index) == LUA_TNUMBER) return number_tensor(lua_tonumber(L, index), like.device());
  // A released tensor is still a Tensor: check_tensor says it was released.
  if (lx_to_proxy(L, index, LxTraits<torch::Tensor>::type) != nullptr) return check_tensor(L, index);
  throw LxArgError(index, "expected Tensor or number, got " + lx_typename(L, index));
}

bool has_option(lua_State* L, int index, const char* key) {
  if (lua_type(L, index) != LUA_TTABLE) return false;
  bool present = lx_get_field(L, index, key) != LUA_TNIL;
  lua_pop(L, 1);
  return present;
}

torch::TensorOptions check_tensor_options(lua_State* L, int index) {
  torch::TensorOptions options = torch::TensorOptions().dtype(torch::kFloat32);
  if (lua_isnoneornil(L, index)) return options;
  lx_check_table(L, index, "options table {dtype=, device=, requires_grad=}");
  for (const char* key : {"dtype", "device", "requires_grad"}) {
    int type = lx_get_field(L, index, key);
    if (type != LUA_TNIL) {
      std::string k = key;
      if (k == "requires_grad") {
        if (type != LUA_TBOOLEAN) throw LxArgError(index, "options.requires_grad must be a boolean");
        options = options.requires_grad(lua_toboolean(L, -1) != 0);
      } else if (type != LUA_TSTRING) {
        throw LxArgError(index, "options." + k + " must be a string");
      } else if (k == "dtype") {
        options = options.dtype(util::parse_dtype(lua_tostring(L, -1)));
      } else {
        options = options.device(util::parse_device(lua_tostring(L, -1)));
      }
    }
    lua_pop(L, 1);
  }
  // Unknown option names are mistakes (e.g. dtpye=); say so.
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    bool named = lua_type(L, -2) == LUA_TSTRING;
    std::string key = named ? lua_tostring(L, -2) : "";
    if (!named) {  // e.g. {"float64"}: show the key without converting it in place (lua_next needs it)
      lua_pushvalue(L, -2);
      key = "[" + (lua_type(L, -1) == LUA_TNUMBER ? c10::str(lua_tonumber(L, -1)) : lx_typename(L, -1)) + "]";
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (!named || (key != "dtype" && key != "device" && key != "requires_grad")) {
      lua_pop(L, 1);
      throw LxArgError(index, "unknown tensor option " + (named ? "'" + key + "'" : key) +
                                  " (valid: 'dtype', 'device', 'requires_grad')");
    }
  }
  return options;
}

std::vector<int64_t> check_shape(lua_State* L, int first, int* next) {
  std::vector<int64_t> shape;
  if (lua_type(L, first) == LUA_TTABLE && !lx_is<torch::Tensor>(L, first)) {
    auto n = static_cast<int>(lua_objlen(L, first));
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, first, i);
      if (lua_type(L, -1) != LUA_TNUMBER) {
        lua_pop(L, 1);
        throw LxArgError(first, "shape entries must be integers");
      }
      double d = lua_tonumber(L, -1);
      lua_pop(L, 1);
      if (d != static_cast<double>(static_cast<int64_t>(d))) throw LxArgError(first, "shape entries must be integers");
      shape.push_back(static_cast<int64_t>(d));
    }
    *next = first + 1;
    return shape;
  }
  if (lua_type(L, first) != LUA_TNUMBER)
    throw LxArgError(first, "expected shape (integers or a table of integers), got " + lx_typename(L, first));
  int index = first;
  while (lua_type(L, index) == LUA_TNUMBER) shape.push_back(lx_check_integer(L, index++));
  *next = index;
  return shape;
}

int64_t check_dim(lua_State* L, int index, const torch::Tensor& t) {
  int64_t dim = lx_check_integer(L, index);
  int64_t rank = std::max<int64_t>(t.dim(), 1);
  if (dim < -rank || dim >= rank)
    throw LxArgError(index, "dimension " + std::to_string(dim) + " out of range for a tensor with " +
                                std::to_string(t.dim()) + " dimension(s) (valid: " + std::to_string(-rank) + " to " +
                                std::to_string(rank - 1) + ")");
  return dim;
}

namespace {

const char* name_of(lua_State* L) {
  return lua_tostring(L, lua_upvalueindex(2));
}

// --- table-driven families ----------------------------------------------------------------------

using UnaryFn = torch::Tensor (*)(const torch::Tensor&);
struct UnaryOp {
  const char* name;
  UnaryFn fn;
};
const UnaryOp kUnaryOps[] = {
    {"abs", [](const torch::Tensor& t) { return t.abs(); }},
    {"neg", [](const torch::Tensor& t) { return t.neg(); }},
    {"exp", [](const torch::Tensor& t) { return t.exp(); }},
    {"log", [](const torch::Tensor& t) { return t.log(); }},
    {"sqrt", [](const torch::Tensor& t) { return t.sqrt(); }},
    {"rsqrt", [](const torch::Tensor& t) { return t.rsqrt(); }},
    {"sin", [](const torch::Tensor& t) { return t.sin(); }},
    {"cos", [](const torch::Tensor& t) { return t.cos(); }},
    {"tanh", [](const torch::Tensor& t) { return t.tanh(); }},
    {"sigmoid", [](const torch::Tensor& t) { return t.sigmoid(); }},
    {"relu", [](const torch::Tensor& t) { return torch::relu(t); }},
    {"gelu", [](const torch::Tensor& t) { return torch::gelu(t); }},
    {"silu", [](const torch::Tensor& t) { return torch::silu(t); }},
    {"floor", [](const torch::Tensor& t) { return t.floor(); }},
    {"ceil", [](const torch::Tensor& t) { return t.ceil(); }},
    {"round", [](const torch::Tensor& t) { return t.round(); }},
    {"sign", [](const torch::Tensor& t) { return t.sign(); }},
    {"isnan", [](const torch::Tensor& t) { return t.isnan(); }},
    {"logical_not", [](const torch::Tensor& t) { return t.logical_not(); }},
    {"clone", [](const torch::Tensor& t) { return t.clone(); }},
    {"detach", [](const torch::Tensor& t) { return t.detach(); }},
    {"contiguous", [](const torch::Tensor& t) { return t.contiguous(); }},
    {"t", [](const torch::Tensor& t) { return t.t(); }},
    {"float", [](const torch::Tensor& t) { return t.to(torch::kFloat32); }},
    {"double", [](const torch::Tensor& t) { return t.to(torch::kFloat64); }},
    {"long", [](const torch::Tensor& t) { return t.to(torch::kInt64); }},
    {"bool", [](const torch::Tensor& t) { return t.to(torch::kBool); }},
    {"cpu", [](const torch::Tensor& t) { return t.cpu(); }},
    {"all", [](const torch::Tensor& t) { return t.all(); }},
    {"any", [](const torch::Tensor& t) { return t.any(); }},
};

int w_unary(lua_State* L) {
  return lx_guard(L, name_of(L), [&] {
    auto* op = static_cast<const UnaryOp*>(lua_touserdata(L, lua_upvalueindex(1)));
    push_tensor(L, op->fn(check_tensor(L, 1)));
    return 1;
  });
}

using BinaryFn = torch::Tensor (*)(const torch::Tensor&, const torch::Tensor&);
struct BinaryOp {
  const char* name;
  BinaryFn fn;
};
const BinaryOp kBinaryOps[] = {
    {"add", [](const torch::Tensor& a, const torch::Tensor& b) { return a + b; }},
    {"sub", [](const torch::Tensor& a, const torch::Tensor& b) { return a - b; }},
    {"mul", [](const torch::Tensor& a, const torch::Tensor& b) { return a * b; }},
    {"div", [](const torch::Tensor& a, const torch::Tensor& b) { return a / b; }},
    {"pow", [](const torch::Tensor& a, const torch::Tensor& b) { return a.pow(b); }},
    {"remainder", [](const torch::Tensor& a, const torch::Tensor& b) { return a.remainder(b); }},
    {"maximum", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::maximum(a, b); }},
    {"minimum", [](const torch::Tensor& a, const torch::Tensor& b) { return torch::minimum(a, b); }},
    {"eq", [](const torch::Tensor& a, const torch::Tensor& b) { return a.eq(b); }},
    {"ne", [](const torch::Tensor& a, const torch::Tensor& b) { return a.ne(b); }},
    {"lt", [](const torch::Tensor& a, const torch::Tensor& b) { return a.lt(b); }},
    {"le", [](const torch::Tensor& a, const torch::Tensor& b) { return a.le(b); }},
    {"gt", [](const torch::Tensor& a, const torch::Tensor& b) { return a.gt(b); }},
    {"ge", [](const torch::Tensor& a, const torch::Tensor& b) { return a.ge(b); }},
    {"logical_and", [](const torch::Tensor& a, const torch::Tensor& b) { return a.logical_and(b); }},
    {"logical_or", [](const torch::Tensor& a, const torch::Tensor& b) { return a.logical_or(b); }},
    {"matmul", [](const torch::Tensor& a, const torch::Tensor& b) { return a.matmul(b); }},
    {"add_", [](const torch::Tensor& a, const torch::Tensor& b) { return const_cast<torch::Tensor&>(a).add_(b); }},
    {"sub_", [](const torch::Tensor& a, const torch::Tensor& b) { return const_cast<torch::Tensor&>(a).sub_(b); }},
    {"mul_", [](const torch::Tensor& a, const torch::Tensor& b) { return const_cast<torch::Tensor&>(a).mul_(b); }},
    {"div_", [](const torch::Tensor& a, const torch::Tensor& b) { return const_cast<torch::Tensor&>(a).div_(b); }},
    {"copy_", [](const torch::Tensor& a, const torch::Tensor& b) { return const_cast<torch::Tensor&>(a).copy_(b); }},
};

int w_binary(lua_State* L) {
  return lx_guard(L, name_of(L), [&] {
    auto* op = static_cast<const BinaryOp*>(lua_touserdata(L, lua_upvalueindex(1)));
    auto& a = check_tensor(L, 1);
    push_tensor(L, op->fn(a, check_tensor_or_number(L, 2, a)));
    return 1;
  });
}

// Arithmetic metamethods accept a number on either side (2 * t, t - 1).
template <BinaryFn Fn>
int w_arith(lua_State* L) {
  return lx_guard(L, "Tensor arithmetic", [&] {
    if (lua_type(L, 1) == LUA_TNUMBER) {
      auto& b = check_tensor(L, 2);
      push_tensor(L, Fn(check_tensor_or_number(L, 1, b), b));
    } else {
      auto& a = check_tensor(L, 1);
      push_tensor(L, Fn(a, check_tensor_or_number(L, 2, a)));
    }
    return 1;
  });
}
torch::Tensor op_add(const torch::Tensor& a, const torch::Tensor& b) {
  return a + b;
}
torch::Tensor op_sub(const torch::Tensor& a, const torch::Tensor& b) {
  return a - b;
}
torch::Tensor op_mul(const torch::Tensor& a, const torch::Tensor& b) {
  return a * b;
}
torch::Tensor op_div(const torch::Tensor& a, const torch::Tensor& b) {
  return a / b;
}
torch::Tensor op_pow(const torch::Tensor& a, const torch::Tensor& b) {
  return a.pow(b);
}
torch::Tensor op_mod(const torch::Tensor& a, const torch::Tensor& b) {
  return a.remainder(b);
}

int w_unm(lua_State* L) {
  return lx_guard(L, "Tensor negation", [&] {
    push_tensor(L, -check_tensor(L, 1));
    return 1;
  });
}

// Reductions: t:sum() over everything, t:sum(dim [, keepdim]) over one dimension.
using FullReduceFn = torch::Tensor (*)(const torch::Tensor&);
using DimReduceFn = torch::Tensor (*)(const torch::Tensor&, int64_t, bool);
struct ReduceOp {
  const char* name;
  FullReduceFn full;
  DimReduceFn by_dim;
};
const ReduceOp kReduceOps[] = {
    {"sum", [](const torch::Tensor& t) { return t.sum(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.sum(d, k); }},
    {"mean", [](const torch::Tensor& t) { return t.mean(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.mean(d, k); }},
    {"prod", [](const torch::Tensor& t) { return t.prod(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.prod(d, k); }},
    {"std", [](const torch::Tensor& t) { return t.std(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.std(d, /*unbiased=*/true, k); }},
    {"var", [](const torch::Tensor& t) { return t.var(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.var(d, /*unbiased=*/true, k); }},
    {"amax", [](const torch::Tensor& t) { return t.amax(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.amax(d, k); }},
    {"amin", [](const torch::Tensor& t) { return t.amin(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.amin(d, k); }},
    {"argmax", [](const torch::Tensor& t) { return t.argmax(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.argmax(d, k); }},
    {"argmin", [](const torch::Tensor& t) { return t.argmin(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.argmin(d, k); }},
    {"logsumexp", [](const torch::Tensor& t) { return t.flatten().logsumexp(0); },
     [](const torch::Tensor& t, int64_t d, bool k) { return t.logsumexp(d, k); }},
    {"norm", [](const torch::Tensor& t) { return t.norm(); },
     [](const torch::Tensor& t, int64_t d, bool k) { return torch::norm(t, 2, {d}, k); }},
};

int w_reduce(lua_State* L) {
  return lx_guard(L, name_of(L), [&] {
    auto* op = static_cast<const ReduceOp*>(lua_touserdata(L, lua_upvalueindex(1)));
    auto& t = check_tensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
      push_tensor(L, op->full(t));
    } else {
      bool keepdim = lx_opt_boolean(L, 3).value_or(false);
      push_tensor(L, op->by_dim(t, check_dim(L, 2, t), keepdim));
    }
    return 1;
  });
}

// t:max() -> scalar tensor; t:max(dim [, keepdim]) -> values, indices (like PyTorch).
template <bool IsMax>
int w_extreme(lua_State* L) {
  return lx_guard(L, IsMax ? "Tensor:max" : "Tensor:min", [&] {
    auto& t = check_tensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
      push_tensor(L, IsMax ? t.max() : t.min());
      return 1;
    }
    bool keepdim = lx_opt_boolean(L, 3).value_or(false);
    auto [values, indices] = IsMax ? t.max(check_dim(L, 2, t), keepdim) : t.min(check_dim(L, 2, t), keepdim);
    push_tensor(L, values);
    push_tensor(L, indices);
    return 2;
  });
}

// --- properties and conversions ----------------------------------------------------------------

void push_shape(lua_State* L, const torch::Tensor& t) {
  lua_createtable(L, static_cast<int>(t.dim()), 0);
  for (int64_t i = 0; i < t.dim(); ++i) {
    lua_pushnumber(L, static_cast<double>(t.size(i)));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int w_properties(lua_State* L) {
  return lx_guard(L, "Tensor property", [&] {
    auto& t = check_tensor(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)  // t[1] is not Python's t[0]; say what to use instead
      throw util::ConfigError(
          "Tensor cannot be indexed with a " + lx_typename(L, 2) + " key",
          "use t:get(i, ...) for a number, t:select(dim, i) or t:slice(dim, start, stop) for a view");
    std::string key = lua_tostring(L, 2);
    if (key == "shape")
      push_shape(L, t);
    else if (key == "dtype")
      lua_pushstring(L, util::dtype_name(t.scalar_type()).c_str());
    else if (key == "device")
      lua_pushstring(L, util::device_name(t.device()).c_str());
    else if (key == "ndim")
      lua_pushnumber(L, static_cast<double>(t.dim()));
    else if (key == "requires_grad")
      lua_pushboolean(L, t.requires_grad());
    else if (key == "is_leaf")
      lua_pushboolean(L, t.is_leaf());
    else if (key == "grad") {
      if (t.grad().defined())
        push_tensor(L, t.grad());
      else
        lua_pushnil(L);
    } else {
      throw util::ConfigError("Tensor has no method or property '" + key +
                              "' (properties: shape, dtype, device, ndim, requires_grad, is_leaf, grad)");
    }
    return 1;
  });
}

int w_size(lua_State* L) {
  return lx_guard(L, "Tensor:size", [&] {
    auto& t = check_tensor(L, 1);
    if (lua_isnoneornil(L, 2))
      push_shape(L, t);
    else
      lua_pushnumber(L, static_cast<double>(t.size(check_dim(L, 2, t))));
    return 1;
  });
}

int w_numel(lua_State* L) {
  return lx_guard(L, "Tensor:numel", [&] {
    lua_pushnumber(L, static_cast<double>(check_tensor(L, 1).numel()));
    return 1;
  });
}

int w_len(lua_State* L) {
  return lx_guard(L, "Tensor length (#)", [&] {
    auto& t = check_tensor(L, 1);
    if (t.dim() == 0) throw util::ConfigError("# of a 0-dim tensor is undefined; use :item()");
    lua_pushnumber(L, static_cast<double>(t.size(0)));
    return 1;
  });
}

// t:to("float64") | t:to("cuda:0") | t:to{dtype=, device=}
int w_to(lua_State* L) {
  return lx_guard(L, "Tensor:to", [&] {
    auto& t = check_tensor(L, 1);
    if (lua_type(L, 2) == LUA_TTABLE) {
      auto options = check_tensor_options(L, 2);
      push_tensor(L, t.to(has_option(L, 2, "device") ? options.device() : t.device(),
                          has_option(L, 2, "dtype") ? c10::typeMetaToScalarType(options.dtype()) : t.scalar_type()));
      return 1;
    }
    std::string target = lx_check_string(L, 2);
    if (target == "cpu" || target.rfind("cuda", 0) == 0)
      push_tensor(L, t.to(util::parse_device(target)));
    else
      push_tensor(L, t.to(util::parse_dtype(target)));
    return 1;
  });
}

int w_item(lua_State* L) {
  return lx_guard(L, "Tensor:item", [&] {
    auto& t = check_tensor(L, 1);
    if (t.numel() != 1)
      throw util::ConfigError("item() needs a tensor with exactly one element, this one has shape " +
                              c10::str(t.sizes()));
    if (t.scalar_type() == torch::kBool)
      lua_pushboolean(L, t.item<bool>());
    else
      lua_pushnumber(L, t.item<double>());
    return 1;
  });
}

void push_list(lua_State* L, const torch::Tensor& t, int64_t dim, const double* data, const bool* bools,
               int64_t& offset) {
  // One stack slot per nesting level; tensors may have more dims than the 20 slots a C function gets.
  if (!lua_checkstack(L, 2)) throw std::runtime_error("tolist: tensor nested too deeply");
  if (dim == t.dim()) {
    if (bools != nullptr)
      lua_pushboolean(L, bools[offset]);
    else
      lua_pushnumber(L, data[offset]);
    ++offset;
    return;
  }
  lua_createtable(L, static_cast<int>(t.size(dim)), 0);
  for (int64_t i = 0; i < t.size(dim); ++i) {
    push_list(L, t, dim + 1, data, bools, offset);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int w_tolist(lua_State* L) {
  return lx_guard(L, "Tensor:tolist", [&] {
    auto& t = check_tensor(L, 1);
    bool is_bool = t.scalar_type() == torch::kBool;
    auto flat = t.detach().cpu().contiguous().to(is_bool ? torch::kBool : torch::kFloat64);
    int64_t offset = 0;
    push_list(L, flat, 0, is_bool ? nullptr : flat.data_ptr<double>(), is_bool ? flat.data_ptr<bool>() : nullptr,
              offset);
    return 1;
  });
}

int w_tostring(lua_State* L) {
  return lx_guard(L, "Tensor:__tostring", [&] {
    Proxy* proxy = lx_to_proxy(L, 1, LxTraits<torch::Tensor>::type);
    if (proxy == nullptr || !proxy->object) {
      lua_pushstring(L, "Tensor (released)");
      return 1;
    }
    auto& t = check_tensor(L, 1);
    std::ostringstream text;
    text << "Tensor(" << util::dtype_name(t.scalar_type()) << ", shape " << t.sizes() << ", " << t.device() << ")";
    if (t.numel() <= 64) text << "\n" << t.detach().cpu();
    lua_pushstring(L, text.str().c_str());
    return 1;
  });
}

// --- shape ops, slicing, indexing --------------------------------------------------------------

int w_reshape(lua_State* L) {
  return lx_guard(L, "Tensor:reshape", [&] {
    int next = 0;
    push_tensor(L, check_tensor(L, 1).reshape(check_shape(L, 2, &next)));
    return 1;
  });
}

int w_view(lua_State* L) {
  return lx_guard(L, "Tensor:view", [&] {
    int next = 0;
    push_tensor(L, check_tensor(L, 1).view(check_shape(L, 2, &next)));
    return 1;
  });
}

int w_expand(lua_State* L) {
  return lx_guard(L, "Tensor:expand", [&] {
    int next = 0;
    push_tensor(L, check_tensor(L, 1).expand(check_shape(L, 2, &next)));
    return 1;
  });
}

int w_permute(lua_State* L) {
  return lx_guard(L, "Tensor:permute", [&] {
    auto& t = check_tensor(L, 1);
    int next = 0;
    auto dims = check_shape(L, 2, &next);
    if (static_cast<int64_t>(dims.size()) != t.dim())
      throw LxArgError(2,
                       "permute needs " + std::to_string(t.dim()) + " dimensions, got " + std::to_string(dims.size()));
    push_tensor(L, t.permute(dims));
    return 1;
  });
}

int w_transpose(lua_State* L) {
  return lx_guard(L, "Tensor:transpose", [&] {
    auto& t = check_tensor(L, 1);
    push_tensor(L, t.transpose(check_dim(L, 2, t), check_dim(L, 3, t)));
    return 1;
  });
}

int w_flatten(lua_State* L) {
  return lx_guard(L, "Tensor:flatten", [&] {
    auto& t = check_tensor(L, 1);
    int64_t start = lua_isnoneornil(L, 2) ? 0 : check_dim(L, 2, t);
    int64_t end = lua_isnoneornil(L, 3) ? -1 : check_dim(L, 3, t);
    push_tensor(L, t.flatten(start, end));
    return 1;
  });
}

int w_squeeze(lua_State* L) {
  return lx_guard(L, "Tensor:squeeze", [&] {
    auto& t = check_tensor(L, 1);
    push_tensor(L, lua_isnoneornil(L, 2) ? t.squeeze() : t.squeeze(check_dim(L, 2, t)));
    return 1;
  });
}

int w_unsqueeze(lua_State* L) {
  return lx_guard(L, "Tensor:unsqueeze", [&] {
    auto& t = check_tensor(L, 1);
    int64_t dim = lx_check_integer(L, 2);
    if (dim < -t.dim() - 1 || dim > t.dim())
      throw LxArgError(2, "dimension " + std::to_string(dim) + " out of range for unsqueeze of a tensor with " +
                              std::to_string(t.dim()) + " dimension(s) (valid: " + std::to_string(-t.dim() - 1) +
                              " to " + std::to_string(t.dim()) + ")");
    push_tensor(L, t.unsqueeze(dim));
    return 1;
  });
}

// t:slice(dim, start [, stop [, step]]): Python's t[..., start:stop:step, ...] on one dimension;
// start = nil means from the beginning, stop = nil to the end.
int w_slice(lua_State* L) {
  return lx_guard(L, "Tensor:slice", [&] {
    auto& t = check_tensor(L, 1);
    int64_t dim = check_dim(L, 2, t);
    std::optional<int64_t> start = lx_opt_integer(L, 3);
    std::optional<int64_t> stop = lx_opt_integer(L, 4);
    int64_t step = lx_opt_integer(L, 5).value_or(1);
    if (step <= 0) throw LxArgError(5, "slice step must be positive");
    push_tensor(L, t.slice(dim, start, stop, step));
    return 1;
  });
}

int w_narrow(lua_State* L) {
  return lx_guard(L, "Tensor:narrow", [&] {
    auto& t = check_tensor(L, 1);
    push_tensor(L, t.narrow(check_dim(L, 2, t), lx_check_integer(L, 3), lx_check_integer(L, 4)));
    return 1;
  });
}

int w_select(lua_State* L) {
  return lx_guard(L, "Tensor:select", [&] {
    auto& t = check_tensor(L, 1);
    int64_t dim = check_dim(L, 2, t);
    int64_t index = lx_check_integer(L, 3);
    if (index < -t.size(dim) || index >= t.size(dim))
      throw LxArgError(3, "index " + std::to_string(index) + " out of range for dimension " + std::to_string(dim) +
                              " of size " + std::to_string(t.size(dim)));
    push_tensor(L, t.select(dim, index));
    return 1;
  });
}

int w_index_select(lua_State* L) {
  return lx_guard(L, "Tensor:index_select", [&] {
    auto& t = check_tensor(L, 1);
    push_tensor(L, t.index_select(check_dim(L, 2, t), check_tensor(L, 3).to(torch::kLong)));
    return 1;
  });
}

int w_masked_select(lua_State* L) {
  return lx_guard(L, "Tensor:masked_select", [&] {
    push_tensor(L, check_tensor(L, 1).masked_select(check_tensor(L, 2).to(torch::kBool)));
    return 1;
  });
}

int w_masked_fill(lua_State* L) {
  return lx_guard(L, "Tensor:masked_fill", [&] {
    push_tensor(L, check_tensor(L, 1).masked_fill(check_tensor(L, 2).to(torch::kBool), lx_check_number(L, 3)));
    return 1;
  });
}

// t:get(i, j, ...) -> number at those (0-based) indices.
int w_get(lua_State* L) {
  return lx_guard(L, "Tensor:get", [&] {
    auto t = check_tensor(L, 1);
    int top = lua_gettop(L);
    if (top - 1 != t.dim())
      throw LxArgError(2, "get needs " + std::to_string(t.dim()) + " indices, got " + std::to_string(top - 1));
    for (int i = 2; i <= top; ++i) {
      int64_t index = lx_check_integer(L, i);
      if (index < -t.size(0) || index >= t.size(0))
        throw LxArgError(i, "index " + std::to_string(index) + " out of range for size " + std::to_string(t.size(0)));
      t = t.select(0, index);
    }
    if (t.scalar_type() == torch::kBool)
      lua_pushboolean(L, t.item<bool>());
    else
      lua_pushnumber(L, t.item<double>());
    return 1;
  });
}

int w_clamp(lua_State* L) {
  return lx_guard(L, "Tensor:clamp", [&] {
    auto& t = check_tensor(L, 1);
    auto low = lx_opt_number(L, 2);
    auto high = lx_opt_number(L, 3);
    if (!low && !high) throw LxArgError(2, "clamp needs a min, a max, or both");
    push_tensor(L, t.clamp(low ? std::optional<c10::Scalar>(*low) : std::nullopt,
                           high ? std::optional<c10::Scalar>(*high) : std::nullopt));
    return 1;
  });
}

int w_softmax(lua_State* L) {
  return lx_guard(L, name_of(L), [&] {
    auto& t = check_tensor(L, 1);
    bool log = lua_toboolean(L, lua_upvalueindex(1)) != 0;
    int64_t dim = check_dim(L, 2, t);
    push_tensor(L, log ? torch::log_softmax(t, dim) : torch::softmax(t, dim));
    return 1;
  });
}

int w_fill_(lua_State* L) {
  return lx_guard(L, "Tensor:fill_", [&] {
    check_tensor(L, 1).fill_(lx_check_number(L, 2));
    lua_settop(L, 1);
    return 1;
  });
}

int w_zero_(lua_State* L) {
  return lx_guard(L, "Tensor:zero_", [&] {
    check_tensor(L, 1).zero_();
    lua_settop(L, 1);
    return 1;
  });
}

int w_allclose(lua_State* L) {
  return lx_guard(L, "Tensor:allclose", [&] {
    auto& a = check_tensor(L, 1);
    auto& b = check_tensor(L, 2);
    lua_pushboolean(L, a.sizes() == b.sizes() && torch::allclose(a, b.to(a.dtype()), lx_opt_number(L, 3).value_or(1e-5),
                                                                 lx_opt_number(L, 4).value_or(1e-8)));
    return 1;
  });
}

int w_equal(lua_State* L) {
  return lx_guard(L, "Tensor:equal", [&] {
    lua_pushboolean(L, torch::equal(check_tensor(L, 1), check_tensor(L, 2)));
    return 1;
  });
}

// --- autograd ----------------------------------------------------------------------------------

int w_backward(lua_State* L) {
  return lx_guard(L, "Tensor:backward", [&] {
    auto& t = check_tensor(L, 1);
    if (!t.requires_grad())
      throw util::ConfigError("backward() on a tensor that does not require grad",
                              "was it computed inside lr.no_grad, or from tensors without requires_grad?");
    if (lua_isnoneornil(L, 2)) {
      if (t.numel() != 1)
        throw util::ConfigError("backward() without a gradient needs a scalar; this tensor has shape " +
                                c10::str(t.sizes()));
      t.backward();
    } else {
      t.backward(check_tensor(L, 2));
    }
    return 0;
  });
}

int w_requires_grad_(lua_State* L) {
  return lx_guard(L, "Tensor:requires_grad_", [&] {
    check_tensor(L, 1).requires_grad_(lx_opt_boolean(L, 2).value_or(true));
    lua_settop(L, 1);
    return 1;
  });
}

int w_zero_grad(lua_State* L) {
  return lx_guard(L, "Tensor:zero_grad", [&] {
    auto& t = check_tensor(L, 1);
    if (t.grad().defined()) t.mutable_grad() = torch::Tensor();
    return 0;
  });
}

void set_closure(lua_State* L, int table, const char* key, lua_CFunction fn, const void* op, const std::string& name) {
  lua_pushlightuserdata(L, const_cast<void*>(op));
  lua_pushstring(L, name.c_str());
  lua_pushcclosure(L, fn, 2);
  lua_setfield(L, table, key);
}

}  // namespace

void open_tensor(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"size", w_size},
                              {"numel", w_numel},
                              {"to", w_to},
                              {"item", w_item},
                              {"tolist", w_tolist},
                              {"reshape", w_reshape},
                              {"view", w_view},
                              {"expand", w_expand},
                              {"permute", w_permute},
                              {"transpose", w_transpose},
                              {"flatten", w_flatten},
                              {"squeeze", w_squeeze},
                              {"unsqueeze", w_unsqueeze},
                              {"slice", w_slice},
                              {"narrow", w_narrow},
                              {"select", w_select},
                              {"index_select", w_index_select},
                              {"masked_select", w_masked_select},
                              {"masked_fill", w_masked_fill},
                              {"get", w_get},
                              {"clamp", w_clamp},
                              {"fill_", w_fill_},
                              {"zero_", w_zero_},
                              {"allclose", w_allclose},
                              {"equal", w_equal},
                              {"max", w_extreme<true>},
                              {"min", w_extreme<false>},
                              {"backward", w_backward},
                              {"requires_grad_", w_requires_grad_},
                              {"zero_grad", w_zero_grad},
                              {nullptr, nullptr}};
  const luaL_Reg metamethods[] = {{"__add", w_arith<op_add>}, {"__sub", w_arith<op_sub>}, {"__mul", w_arith<op_mul>},
                                  {"__div", w_arith<op_div>}, {"__pow", w_arith<op_pow>}, {"__mod", w_arith<op_mod>},
                                  {"__unm", w_unm},           {"__len", w_len},           {"__tostring", w_tostring},
                                  {nullptr, nullptr}};
  lx_register_type(L, LxTraits<torch::Tensor>::type, methods, w_properties, metamethods);

  // Table-driven methods go into the same methods table (the metatable's __index upvalue 1).
  luaL_getmetatable(L, LxTraits<torch::Tensor>::type.registry_key);
  lua_getfield(L, -1, "__index");
  lua_getupvalue(L, -1, 1);
  int methods_table = lua_gettop(L);
  for (const auto& op : kUnaryOps)
    set_closure(L, methods_table, op.name, w_unary, &op, std::string("Tensor:") + op.name);
  for (const auto& op : kBinaryOps)
    set_closure(L, methods_table, op.name, w_binary, &op, std::string("Tensor:") + op.name);
  for (const auto& op : kReduceOps)
    set_closure(L, methods_table, op.name, w_reduce, &op, std::string("Tensor:") + op.name);
  for (bool log : {false, true}) {
    lua_pushboolean(L, log);
    lua_pushstring(L, log ? "Tensor:log_softmax" : "Tensor:softmax");
    lua_pushcclosure(L, w_softmax, 2);
    lua_setfield(L, methods_table, log ? "log_softmax" : "softmax");
  }
  lua_pop(L, 3);

  // lr.nn.<op>(x, ...) for the functional ops, same implementations as the methods.
  lua_newtable(L);
  int nn = lua_gettop(L);
  for (const auto& op : kUnaryOps)
    if (std::string_view(op.name) == "relu" || std::string_view(op.name) == "gelu" ||
        std::string_view(op.name) == "silu" || std::string_view(op.name) == "sigmoid" ||
        std::string_view(op.name) == "tanh")
      set_closure(L, nn, op.name, w_unary, &op, std::string("lr.nn.") + op.name);
  for (bool log : {false, true}) {
    lua_pushboolean(L, log);
    lua_pushstring(L, log ? "lr.nn.log_softmax" : "lr.nn.softmax");
    lua_pushcclosure(L, w_softmax, 2);
    lua_setfield(L, nn, log ? "log_softmax" : "softmax");
  }
  lua_setfield(L, module, "nn");
  open_tensor_functions(L, module);
}

// batch: table name -> Tensor. Strings (e.g. task text) are not model inputs and are skipped.
std::map<std::string, torch::Tensor> check_batch(lua_State* L, int index) {
  lx_check_table(L, index, "batch table of name = Tensor");
  std::map<std::string, torch::Tensor> batch;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      throw LxArgError(index, "batch keys must be strings");
    }
    std::string key = lua_tostring(L, -2);
    if (lx_is<torch::Tensor>(L, -1)) {
      batch[key] = check_tensor(L, lua_gettop(L));
    } else if (lua_type(L, -1) != LUA_TSTRING) {
      std::string got = lx_typename(L, -1);
      lua_pop(L, 2);
      throw LxArgError(index, "batch['" + key + "'] is a " + got + ", expected Tensor");
    }
    lua_pop(L, 1);
  }
  return batch;
}

void push_batch(lua_State* L, std::map<std::string, torch::Tensor> batch) {
  lua_createtable(L, 0, static_cast<int>(batch.size()));
  for (auto& [key, tensor] : batch) {
    push_tensor(L, std::move(tensor));
    lua_setfield(L, -2, key.c_str());
  }
}

}  // namespace lrhost::bindings
