// A process-wide on/off switch for an optional fast path that computes what the plain path computes
// (host/nn's reordered-weight Linear, bulk dropout masks): on by default, off from start-up when its
// environment variable is "0" (to compare with the plain path), and settable at run time by tests.
#pragma once
#include <atomic>
#include <cstdlib>
#include <string_view>

namespace lrhost::util {

class EnvSwitch {
 public:
  explicit EnvSwitch(const char* variable) : enabled_(!is_zero(std::getenv(variable))) {}

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Returns the previous setting.
  bool set(bool enabled) { return enabled_.exchange(enabled); }

 private:
  static bool is_zero(const char* value) { return value != nullptr && std::string_view(value) == "0"; }
  std::atomic<bool> enabled_;
};

}  // namespace lrhost::util
