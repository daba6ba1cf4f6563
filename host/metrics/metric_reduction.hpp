// How a logged metric combines across ranks, chosen by its name so that every recipe's custom
// scalars get the right reduction without declaring it: times are the slowest rank's (the step
// waits for it), rates and counts add up, memory is the largest rank's, everything else (losses,
// norms, learning rates) is the mean.
#pragma once

#include <string>
#include <string_view>

namespace lrhost::metrics {

enum class Reduction { mean, sum, max };

// The rules, first match wins:
//   `_per_s`, `/s`            sum   per-rank rates (samples_per_s) add up to the job's rate
//   `_count`                  sum   per-rank counts
//   `_s`, `_time`             max   seconds: the slowest rank sets the pace
//   `_gib`, `_bytes`          max   memory: the fullest rank is the one that runs out
//   anything else             mean  losses, gradient norms, lr, success rates
Reduction reduction_for(std::string_view metric_name);

const char* reduction_name(Reduction reduction);

}  // namespace lrhost::metrics
