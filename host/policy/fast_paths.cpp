// The process-wide FastPaths instance.
#include "host/policy/fast_paths.hpp"

namespace lrhost::policy {

FastPaths& fast_paths() {
  static FastPaths paths;
  return paths;
}

}  // namespace lrhost::policy
