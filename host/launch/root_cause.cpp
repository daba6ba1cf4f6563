// The root-cause rules of root_cause.hpp. Ties in time go to the lower rank so the choice is
// deterministic.
#include "host/launch/root_cause.hpp"

#include <algorithm>

#include "host/launch/signals.hpp"

namespace lrhost::launch {
namespace {

bool earlier(const ErrorRecord& a, const ErrorRecord& b) {
  return a.time_us != b.time_us ? a.time_us < b.time_us : a.rank < b.rank;
}

std::optional<std::size_t> process_of(const AttemptOutcome& outcome, int rank) {
  for (std::size_t i = 0; i < outcome.ranks.size(); ++i)
    if (outcome.ranks[i].rank == rank) return i;
  return std::nullopt;
}

// A rank that failed without the launcher having stopped it and without an error record.
bool failed_silently(const RankProcess& process, const std::vector<ErrorRecord>& errors) {
  if (!process.status || succeeded(*process.status) || process.stop_signal) return false;
  return std::none_of(errors.begin(), errors.end(), [&](const ErrorRecord& e) { return e.rank == process.rank; });
}

}  // namespace

RootCause choose_root_cause(const AttemptOutcome& outcome, const std::vector<ErrorRecord>& errors) {
  std::vector<ErrorRecord> sorted = errors;
  std::sort(sorted.begin(), sorted.end(), earlier);
  RootCause cause;
  auto pick_record = [&](std::vector<ErrorRecord>::iterator chosen, bool certain) {
    cause.rank = chosen->rank;
    cause.error = *chosen;
    cause.certain = certain;
    sorted.erase(chosen);
  };

  auto first_cause = std::find_if(sorted.begin(), sorted.end(), [](const ErrorRecord& e) { return !e.consequence; });
  std::optional<std::size_t> silent;
  for (std::size_t i = 0; i < outcome.ranks.size(); ++i)
    if (failed_silently(outcome.ranks[i], errors) &&
        (!silent || outcome.ranks[i].runtime < outcome.ranks[*silent].runtime))
      silent = i;

  if (first_cause != sorted.end()) {
    pick_record(first_cause, true);
  } else if (silent) {
    cause.rank = outcome.ranks[*silent].rank;
  } else if (!sorted.empty()) {
    pick_record(sorted.begin(), false);
  } else {
    cause.rank = outcome.ranks.at(outcome.first_failure.value()).rank;
    cause.certain = false;
  }
  cause.process = process_of(outcome, cause.rank);
  cause.others = std::move(sorted);
  return cause;
}

}  // namespace lrhost::launch
