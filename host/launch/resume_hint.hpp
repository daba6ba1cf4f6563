// The line an interrupted run ends with: `lrhost resume <output dir> --nproc 2 --device cpu`, the
// command that continues it from its newest checkpoint as the job ran (the same ranks, device, nodes,
// restarts, timeouts, save signals and threads: a bare `lrhost resume DIR` of a 2-rank job would go on
// in one process at half the effective batch). A Ctrl-C (SIGINT) or a scheduler's SIGTERM used to end
// a run with no word on how to go on.
//
// The process the user started knows the launch flags and hands them down in $LRHOST_RESUME_FLAGS
// (ranks inherit it); ranks started by torchrun or srun have none to repeat.
//
// Rank 0's checkpoint binding records the command whenever the run has a checkpoint to resume from
// (at lr.checkpoint when one exists, after every save), in two places: in memory, for the signal
// handler of a process that nothing launched (it prints the line, then dies of the signal as
// before), and in <run_dir>/resume_command.txt, which the launcher reads for its interrupt report
// (the ranks, which it stops, print nothing themselves).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "host/launch/launch_options.hpp"

namespace lrhost::launch {

inline constexpr const char* kResumeCommandFile = "resume_command.txt";
inline constexpr const char* kResumeFlagsVariable = "LRHOST_RESUME_FLAGS";

// The flags of `lrhost resume` that start the job as `options` does: "--nproc 2 --device cpu", plus
// whatever differs from the defaults (--nnodes/--node-rank/--master-addr/--master-port of a
// multi-node job, --max-restarts, --timeout, --rendezvous-timeout, --save-on-signal, --threads N
// when `threads` > 0). Node 0's line: every other node adds its own --node-rank.
std::string resume_flags(const LaunchOptions& options, int threads);
// The same for a recipe run in this process: "--device cpu --threads 4", only what was given
// (`device` "auto" and `threads` 0 are the defaults and left out).
std::string resume_flags_in_process(const std::string& device, int threads);

// "lrhost resume /abs/output_dir" followed by $LRHOST_RESUME_FLAGS when it is set.
std::string resume_command(const std::filesystem::path& output_dir);

// The run can be continued from `output_dir`'s checkpoints: records the command (memory and
// $LRHOST_RUN_DIR/resume_command.txt; a file that cannot be written only costs the hint, with a
// warning).
void note_resumable(const std::filesystem::path& output_dir);

// The recorded command of the run in `run_dir`, or nullopt (no checkpoint yet, or not resumable).
std::optional<std::string> recorded_resume_command(const std::filesystem::path& run_dir);

// For a process that runs a recipe with no launcher above it: on SIGINT or SIGTERM, print the
// recorded command (nothing before there is one) and die of the signal as the default action does.
void print_resume_command_on_interrupt();

}  // namespace lrhost::launch
