// A run folder that a failed attempt leaves with nothing in it but lrhost's own record of the
// failure is removed. `lrhost RECIPE stepz=5` (a typo), a recipe that does not parse, or `lrhost
// eval` of a folder that is no checkpoint fails in a second, and each such attempt used to leave an
// outputs/lrhost/<time>_<recipe>/ folder holding only a log of the error the terminal had just shown.
//
// A folder is removed only when all of these hold: this process claimed it (the default folder,
// not --run-dir or $LRHOST_RUN_DIR), the process failed (its error file exists), the run never
// started (the recipe did not get as far as lr.accelerator or building an optimizer: those mark the
// start), and the folder holds only logs/, errors/ and .lock. A run that started keeps its folder
// and logs whatever happens, since then they are what a user debugs from.
#pragma once
#include <filesystem>

namespace lrhost::launch {

// Called by the bindings when the recipe starts a run (lr.accelerator, lr.optim.*). A rank of a
// launched job also leaves kStartedMarker in the run folder, which keeps the launcher from removing it.
void mark_run_started();
inline constexpr const char* kStartedMarker = ".started";
bool run_started();

// Whether `run_dir` holds nothing but lrhost's bookkeeping (logs/, errors/, .lock).
bool holds_only_bookkeeping(const std::filesystem::path& run_dir);

// Removes the claimed `run_dir` (and its parent when that is left empty), saying so on stderr;
// false when it could not. The launcher calls it for a job whose ranks all failed before starting.
bool remove_unused_run_dir(const std::filesystem::path& run_dir);

// Owns the decision for one claimed folder: on destruction (the end of the process's run), removes
// it when the conditions above hold, saying so on stderr. Move-only; a moved-from guard does nothing.
class UnusedRunDirCleanup {
 public:
  UnusedRunDirCleanup() = default;
  UnusedRunDirCleanup(std::filesystem::path run_dir, int rank) : run_dir_(std::move(run_dir)), rank_(rank) {}
  UnusedRunDirCleanup(UnusedRunDirCleanup&& other) noexcept;
  UnusedRunDirCleanup& operator=(UnusedRunDirCleanup&& other) noexcept;
  UnusedRunDirCleanup(const UnusedRunDirCleanup&) = delete;
  UnusedRunDirCleanup& operator=(const UnusedRunDirCleanup&) = delete;
  ~UnusedRunDirCleanup();

  // Removes the folder now when the conditions hold; true when it did.
  bool remove_if_unused();

 private:
  std::filesystem::path run_dir_;  // empty: nothing to do
  int rank_ = 0;
};

}  // namespace lrhost::launch
