// What an interrupted job leaves to continue from. A Ctrl-C, or a second signal that aborts a
// --save-on-signal save, used to end with only "continue from its newest checkpoint", which leaves the
// user to guess which step that is and whether the step that was running got saved. Rank 0's
// checkpoint binding records where the run's checkpoints go in <run_dir>/checkpoints_dir.txt (next to
// resume_command.txt, at the same moments); the launcher's interrupt report reads the folder then.
#pragma once
#include <filesystem>
#include <string>

namespace lrhost::launch {

inline constexpr const char* kCheckpointsDirFile = "checkpoints_dir.txt";

// Records `checkpoints_dir` in $LRHOST_RUN_DIR/checkpoints_dir.txt (nothing without a run folder; a
// file that cannot be written only costs the report's lines, with a warning).
void note_checkpoints_dir(const std::filesystem::path& checkpoints_dir);

// The report's lines ("lrhost:   ..." each) for the run in `run_dir`: the newest complete checkpoint and
// its step, and that the step in progress was not saved (a save left half-written, which the next
// resume removes, named with its step). `save_aborted`: a second signal ended a save-on-signal save.
// Empty when the run recorded no checkpoints folder.
std::string interrupted_checkpoint_lines(const std::filesystem::path& run_dir, bool save_aborted);

}  // namespace lrhost::launch
