// The data-parallel layout rule; see dp_layout.hpp.
#include "host/dist/dp_layout.hpp"

#include <string>

#include "host/util/error.hpp"

namespace lrhost::dist {

void check_dp_layout(int64_t dp_shard, int64_t dp_replicate, int64_t world_size, int64_t given_shard,
                     int64_t given_replicate) {
  if (dp_shard >= 1 && dp_replicate >= 1 && dp_shard * dp_replicate == world_size) return;
  throw util::ConfigError("parallelism: dp_shard (" + std::to_string(given_shard) + ") x dp_replicate (" +
                              std::to_string(given_replicate) + ") must equal the number of ranks (" +
                              std::to_string(world_size) + ")",
                          "use -1 for one of them to take every rank the other leaves, or change --nproc/--gpus");
}

}  // namespace lrhost::dist
