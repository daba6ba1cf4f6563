// The per-instance forward-hook table and the set of module types whose forward runs it.
#include "host/nn/forward_hooks.hpp"

#include <mutex>
#include <set>
#include <unordered_map>

namespace lrhost::nn {
namespace {

struct HookTable {
  std::mutex mutex;
  std::unordered_map<const torch::nn::Module*, std::shared_ptr<ForwardHooks>> hooks;
  std::set<std::string> hookable_types;
};

HookTable& table() {
  static HookTable instance;
  return instance;
}

}  // namespace

void set_forward_hooks(const torch::nn::Module& module, std::shared_ptr<ForwardHooks> hooks) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  if (hooks)
    t.hooks[&module] = std::move(hooks);
  else
    t.hooks.erase(&module);
}

ForwardHooks* forward_hooks(const torch::nn::Module& module) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  if (t.hooks.empty()) return nullptr;
  auto found = t.hooks.find(&module);
  return found == t.hooks.end() ? nullptr : found->second.get();
}

bool register_hookable_module_type(const std::string& type) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  t.hookable_types.insert(type);
  return true;
}

bool supports_forward_hooks(const std::string& type) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  return t.hookable_types.count(type) > 0;
}

}  // namespace lrhost::nn
