// The newest complete checkpoint and the unsaved step, for the interrupt report; see
// interrupted_checkpoints.hpp.
#include "host/launch/interrupted_checkpoints.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>

#include "host/ckpt/checkpoint_layout.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::launch {
namespace fs = std::filesystem;

namespace {

// The step number that `name` starts with ("000060" of a step folder, "000060-1234" after a temporary
// folder's prefix) without its leading zeros, or "" when it starts with no digit.
std::string leading_step(const std::string& name) {
  std::size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
  if (digits == 0) return {};
  const auto first = name.find_first_not_of('0');
  return first >= digits ? "0" : name.substr(first, digits - first);
}

// ".tmp-000060-1234" -> "60": the step an interrupted save was writing.
std::string temporary_step(const fs::path& temporary) {
  const std::string name = temporary.filename().string();
  const std::string prefix = io::kTempPrefix;
  return name.rfind(prefix, 0) == 0 ? leading_step(name.substr(prefix.size())) : std::string();
}

}  // namespace

void note_checkpoints_dir(const fs::path& checkpoints_dir) {
  const char* run_dir = std::getenv("LRHOST_RUN_DIR");
  if (run_dir == nullptr || *run_dir == '\0') return;
  try {
    io::write_file_atomic(fs::path(run_dir) / kCheckpointsDirFile,
                          fs::absolute(checkpoints_dir).lexically_normal().string() + "\n");
  } catch (const std::exception& error) {
    spdlog::warn("cannot record the checkpoints folder in {}: {}", run_dir, util::describe(error));
  }
}

std::string interrupted_checkpoint_lines(const fs::path& run_dir, bool save_aborted) {
  fs::path checkpoints_dir;
  ckpt::CheckpointScan scan;
  try {
    std::error_code ec;
    if (!fs::is_regular_file(run_dir / kCheckpointsDirFile, ec)) return {};
    std::string text = io::read_text_file(run_dir / kCheckpointsDirFile);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return {};
    checkpoints_dir = text;
    scan = ckpt::scan_checkpoints(checkpoints_dir, /*warn=*/false);
  } catch (const std::exception&) {
    return {};  // the report goes on without these lines
  }
  std::string out;
  for (const auto& temporary : scan.temporary) {
    const std::string step = temporary_step(temporary);
    out += "lrhost:   the save" + (step.empty() ? std::string() : " of step " + step) +
           (save_aborted ? " was aborted by the second signal" : " was cut short") + ": " + temporary.string() +
           " is incomplete (the next resume removes it), so that step was not saved\n";
  }
  if (save_aborted && scan.temporary.empty())
    out +=
        "lrhost:   the second signal stopped the ranks before their save-on-signal checkpoint was begun (or "
        "just after it completed): unless the checkpoint below is that step's, the step in progress was not "
        "saved\n";
  if (scan.last_complete) {
    out += "lrhost:   newest complete checkpoint: " + scan.last_complete->string() + " (step " +
           leading_step(scan.last_complete->filename().string()) + "); the steps after it were not saved\n";
  } else {
    out += "lrhost:   no complete checkpoint in " + checkpoints_dir.string() + ": a rerun starts at step 1\n";
  }
  return out;
}

}  // namespace lrhost::launch
