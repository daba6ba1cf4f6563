// The lock that makes an output folder (a recipe's output_dir: checkpoints/, metrics.jsonl,
// tensorboard/) belong to one job, as the run folder's lock does for --run-dir (run_lock.hpp): two
// jobs with their own run folders but one output_dir would otherwise mix their checkpoints, `last`
// and metrics, and a later resume could pick the other job's checkpoint. The job's global rank 0
// holds an flock on <output_dir>/.output.lock for as long as anything of this process writes there
// (lr.checkpoint takes it, bindings/wrap_checkpoint.cpp); a second job fails at once with the
// holder's pid and host.
// A file of its own, not the run folder's .lock: the front door makes output_dir the run folder,
// whose .lock the launcher already holds, and a second flock on that file would refuse the job
// itself. Only rank 0 takes it, so the ranks of one job never lock each other out.
#pragma once
#include <filesystem>
#include <memory>

#include "host/launch/run_lock.hpp"

namespace lrhost::launch {

inline constexpr const char* kOutputDirLockName = ".output.lock";

// Locks `output_dir` (created when missing) for this process. Claims of one folder in one process
// share one lock, released when the last one is dropped (or when the process ends or dies). Throws
// util::ConfigError "output folder '...' is in use by another job: pid ... on host ..." when another
// process holds it.
std::shared_ptr<const RunDirLock> claim_output_dir(const std::filesystem::path& output_dir);

}  // namespace lrhost::launch
