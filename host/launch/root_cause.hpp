// Which rank's failure caused a failed attempt. The order in which the launcher sees ranks exit says
// little: when rank 1 raises, rank 0's collective fails with "Connection closed by peer" within the
// same poll, and exits as early. The choice is therefore made from what the ranks *recorded* in
// their error files (when, and whether the error was a cause or only a consequence), with the exit
// order as the last resort. Pure, so every rule is unit-tested.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "host/launch/error_file.hpp"
#include "host/launch/supervisor.hpp"

namespace lrhost::launch {

struct RootCause {
  int rank = 0;
  std::optional<std::size_t> process;  // index into AttemptOutcome::ranks; nullopt: a rank of another node
  std::optional<ErrorRecord> error;    // the rank's error record, if it wrote one
  // True when the rank recorded a cause or failed on its own without a record (a signal, a silent
  // exit); false when every rank only recorded consequences and this is the earliest of them.
  bool certain = true;
  std::vector<ErrorRecord> others;  // every other rank's record, earliest first
};

// The rules, in order:
//   1. the earliest error record that is a cause (not a consequence), whatever its time relative to
//      consequences (clocks of different nodes may disagree by more than the echo takes);
//   2. else a rank that failed by itself (a signal or a non-zero exit the launcher did not provoke)
//      and left no error file, the earliest to exit: e.g. one killed by the OOM killer;
//   3. else the earliest consequence record (certain = false);
//   4. else the first rank the launcher saw fail (certain = false).
// `errors` holds the records of every rank of the job that wrote one in this attempt, this node's
// and (with a shared run directory) other nodes'. Requires outcome.first_failure or a record.
RootCause choose_root_cause(const AttemptOutcome& outcome, const std::vector<ErrorRecord>& errors);

}  // namespace lrhost::launch
