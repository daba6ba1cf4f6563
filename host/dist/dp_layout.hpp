// The data-parallel layout rule, in one place for the accelerator (which resolves the recipe's
// parallelism table) and FSDP (which builds its process groups from it): dp_shard ranks hold one copy
// of the model in shards, dp_replicate such groups each hold a copy, and together they are every rank.
#pragma once
#include <cstdint>

namespace lrhost::dist {

// ConfigError unless dp_shard >= 1, dp_replicate >= 1 and dp_shard x dp_replicate == world_size.
// `given_shard` and `given_replicate` are the values as the recipe wrote them (-1 kept), which the
// message names so that the user recognises them.
void check_dp_layout(int64_t dp_shard, int64_t dp_replicate, int64_t world_size, int64_t given_shard,
                     int64_t given_replicate);
inline void check_dp_layout(int64_t dp_shard, int64_t dp_replicate, int64_t world_size) {
  check_dp_layout(dp_shard, dp_replicate, world_size, dp_shard, dp_replicate);
}

}  // namespace lrhost::dist
