// The multi-process launcher behind `lrhost --nproc N RECIPE` / `--gpus N`: creates the run
// directory, hosts the rendezvous store (node 0), starts this node's ranks as fresh processes with
// the torchrun-compatible environment, watches them, prints one root-cause report when one fails,
// and restarts the whole group up to --max-restarts times.
#pragma once
#include "host/launch/launch_options.hpp"

namespace lrhost::launch {

// Runs the job; returns the launcher's exit code: 0 when an attempt succeeded, the root-cause rank's
// exit code (or 128 + its signal; root_cause.hpp) after the last failed attempt, 128 + signal when
// interrupted.
int launch(const LaunchOptions& options);

}  // namespace lrhost::launch
