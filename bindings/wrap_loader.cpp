// Lua binding of the data loader: Dataset:loader(options) or acc:loader(ds, options) build one
// (options: data_options.hpp). Methods: next() -> batch table, steps(first, last) -> iterator of
// (step, batch) for step = first .. last, state() -> saveable position table, stats(),
// batches_per_epoch(), num_samples(), samples_by_group(). loader:release() stops its worker threads at once. The option
// preprocess = policy makes every batch come out through the policy's preprocessor
// (policy::loader_preprocessing).
#include "bindings/wrap_loader.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_dataset.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/data/batch_loader.hpp"
#include "host/data/data_options.hpp"
#include "host/policy/dataset_processors.hpp"

namespace lrhost::bindings {

void push_loader(lua_State* L, std::shared_ptr<data::FrameSource> dataset, int options_index, int rank, int world_size,
                 c10::Device device) {
  // preprocess = policy is the one option that is not JSON: read it, then convert a copy without it.
  std::shared_ptr<policy::Policy> preprocessor;
  nlohmann::json options = nlohmann::json::object();
  if (!lua_isnoneornil(L, options_index)) {
    lx_check_table(L, options_index, "loader options");
    lua_getfield(L, options_index, "preprocess");
    if (!lua_isnil(L, -1)) {
      if (!lx_is<policy::Policy>(L, -1))
        throw LxArgError(options_index,
                         "loader option preprocess must be a Policy (its preprocessor runs on every "
                         "batch), got " +
                             lx_typename(L, -1));
      preprocessor = lx_check_shared<policy::Policy>(L, -1);
    }
    lua_pop(L, 1);
    options = lx_options(L, options_index, options_index, "loader", "preprocess");
  }
  auto request = data::loader_request_from_json(options, rank, world_size, device);
  if (preprocessor) request.options.preprocess = policy::loader_preprocessing(preprocessor, "loader option preprocess");
  lx_push(L, std::make_shared<data::BatchLoader>(std::move(dataset), request.options, request.start));
}

namespace {
const char kPreprocessedKey = 0;  // its address keys the marker metatable in the registry

void push_preprocessed_metatable(lua_State* L) {
  lua_pushlightuserdata(L, const_cast<char*>(&kPreprocessedKey));
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "lrhost.preprocessed_batch");
  lua_setfield(L, -2, "__name");
  lua_pushlightuserdata(L, const_cast<char*>(&kPreprocessedKey));
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}
}  // namespace

void mark_preprocessed_batch(lua_State* L, int index) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  push_preprocessed_metatable(L);
  lua_setmetatable(L, index);
}

bool is_preprocessed_batch(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TTABLE || !lua_getmetatable(L, index)) return false;
  push_preprocessed_metatable(L);
  const bool marked = lua_rawequal(L, -1, -2) != 0;
  lua_pop(L, 2);
  return marked;
}

namespace {
// The loader's next batch as a table, marked when the loader preprocessed it.
void push_loader_batch(lua_State* L, data::BatchLoader& loader) {
  push_batch(L, loader.next());
  if (loader.preprocesses()) mark_preprocessed_batch(L, -1);
}

data::BatchLoader& check_loader(lua_State* L, int index) {
  return lx_check<data::BatchLoader>(L, index);
}

int w_next(lua_State* L) {
  return lx_guard(L, "Loader:next", [&] {
    push_loader_batch(L, check_loader(L, 1));
    return 1;
  });
}

// Iterator body: upvalues are the loader, the last step returned and the final step.
int steps_iterator(lua_State* L) {
  return lx_guard(L, "Loader:steps", [&] {
    auto step = static_cast<int64_t>(lua_tonumber(L, lua_upvalueindex(2))) + 1;
    auto last = static_cast<int64_t>(lua_tonumber(L, lua_upvalueindex(3)));
    if (step > last) {
      lua_pushnil(L);
      return 1;
    }
    auto& loader = check_loader(L, lua_upvalueindex(1));
    lua_pushnumber(L, static_cast<double>(step));
    lua_replace(L, lua_upvalueindex(2));
    lua_pushnumber(L, static_cast<double>(step));
    push_loader_batch(L, loader);
    return 2;
  });
}

int w_steps(lua_State* L) {
  return lx_guard(L, "Loader:steps", [&] {
    check_loader(L, 1);
    int64_t first = lx_check_integer(L, 2), last = lx_check_integer(L, 3);
    if (first < 1) throw LxArgError(2, "the first step must be >= 1, got " + std::to_string(first));
    lua_pushvalue(L, 1);
    lua_pushnumber(L, static_cast<double>(first - 1));
    lua_pushnumber(L, static_cast<double>(last));
    lua_pushcclosure(L, steps_iterator, 3);
    return 1;
  });
}

int w_state(lua_State* L) {
  return lx_guard(L, "Loader:state", [&] {
    auto& loader = check_loader(L, 1);
    lx_push_json(L, data::loader_state_to_json(loader.position(), loader.sampler().options()));
    return 1;
  });
}

int w_stats(lua_State* L) {
  return lx_guard(L, "Loader:stats", [&] {
    auto stats = check_loader(L, 1).stats();
    lx_push_json(L, {{"batches", stats.batches},
                     {"wait_s", stats.wait_s},
                     {"resident_bytes", stats.resident_bytes},
                     {"peak_resident_bytes", stats.peak_resident_bytes}});
    return 1;
  });
}

int w_batches_per_epoch(lua_State* L) {
  return lx_guard(L, "Loader:batches_per_epoch", [&] {
    lua_pushnumber(L, static_cast<double>(check_loader(L, 1).sampler().batches_per_epoch()));
    return 1;
  });
}

// Loader:samples_by_group() -> {n, ...}: samples this rank was handed per dataset of a mixture (one
// entry for a single dataset), from the run's first step.
int w_samples_by_group(lua_State* L) {
  return lx_guard(L, "Loader:samples_by_group", [&] {
    lx_push_json(L, check_loader(L, 1).samples_by_group());
    return 1;
  });
}

int w_num_samples(lua_State* L) {
  return lx_guard(L, "Loader:num_samples", [&] {
    lua_pushnumber(L, static_cast<double>(check_loader(L, 1).sampler().num_samples()));
    return 1;
  });
}
}  // namespace

void open_loader(lua_State* L, int /*module*/) {
  const luaL_Reg methods[] = {{"next", w_next},
                              {"steps", w_steps},
                              {"state", w_state},
                              {"stats", w_stats},
                              {"batches_per_epoch", w_batches_per_epoch},
                              {"num_samples", w_num_samples},
                              {"samples_by_group", w_samples_by_group},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<data::BatchLoader>::type, methods);
}

}  // namespace lrhost::bindings
