// The line an interrupted run ends with: `lrhost resume <output dir>`, the command that continues it
// from its newest checkpoint. A Ctrl-C (SIGINT) or a scheduler's SIGTERM used to end a run with no
// word on how to go on.
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

namespace lrhost::launch {

inline constexpr const char* kResumeCommandFile = "resume_command.txt";

// "lrhost resume /abs/output_dir".
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
