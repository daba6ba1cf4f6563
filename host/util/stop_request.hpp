// A rank's side of preemption (util/save_on_signal.hpp): the signals of --save-on-signal, once armed,
// only record a request to stop; the training loop reads it at a step boundary and the ranks agree
// on it (Accelerator::stop_requested). Armed lazily, by the loop's first check: a recipe whose loop
// never asks keeps the default action (the signal ends the process, as before), so such a signal
// can never be swallowed by a run that will not act on it.
//
// A second request aborts: the handler restores the default action and re-raises, so the process
// dies of the signal at once, in the middle of a save if need be; the save's temporary folder is
// never renamed, and the previous checkpoint stays the newest sound one. A repeat within
// kRepeatWindowMs of the first is the same request delivered twice (Slurm signals every process of
// a job step and the launcher forwards its own copy), not a second one.
#pragma once
#include <vector>

namespace lrhost::util {

inline constexpr long kRepeatWindowMs = 2000;

// Installs the recording handler on `signals` (once; later calls do nothing).
void arm_stop_request(const std::vector<int>& signals);

// The first recorded signal, or 0.
int requested_stop_signal();

}  // namespace lrhost::util
