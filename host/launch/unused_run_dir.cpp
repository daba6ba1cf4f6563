// Removing the run folder of an attempt that failed before its run started; see unused_run_dir.hpp.
#include "host/launch/unused_run_dir.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/launch/run_dir.hpp"

namespace lrhost::launch {
namespace fs = std::filesystem;

namespace {
std::atomic<bool> started{false};
}  // namespace

void mark_run_started() {
  if (started.exchange(true, std::memory_order_relaxed)) return;
  const char* launcher = std::getenv("LRHOST_LAUNCHER_PID");
  const char* run_dir = std::getenv("LRHOST_RUN_DIR");
  if (launcher != nullptr && *launcher != 0 && run_dir != nullptr && *run_dir != 0)
    std::ofstream(fs::path(run_dir) / kStartedMarker);  // the launcher sees that the run started
}

bool run_started() {
  return started.load(std::memory_order_relaxed);
}

bool holds_only_bookkeeping(const fs::path& run_dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(run_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != "logs" && name != "errors" && name != ".lock") return false;
  }
  return !ec;
}

bool remove_unused_run_dir(const fs::path& run_dir) {
  try {
    io::remove_tree(run_dir);  // not fs::remove_all: see io/atomic_dir.hpp
  } catch (const std::exception&) {
    return false;  // a folder that stays is no harm; the run's own error is what matters
  }
  // outputs/lrhost/ too when this leaves it empty (fs::remove leaves a folder with entries alone).
  std::error_code ec;
  fs::remove(run_dir.parent_path(), ec);
  std::fprintf(stderr,
               "lrhost: removed the run folder %s: the run failed before it started, and it held only the "
               "log of the error above\n",
               run_dir.c_str());
  return true;
}

UnusedRunDirCleanup::UnusedRunDirCleanup(UnusedRunDirCleanup&& other) noexcept
    : run_dir_(std::move(other.run_dir_)), rank_(other.rank_) {
  other.run_dir_.clear();
}

UnusedRunDirCleanup& UnusedRunDirCleanup::operator=(UnusedRunDirCleanup&& other) noexcept {
  if (this != &other) {
    run_dir_ = std::move(other.run_dir_);
    rank_ = other.rank_;
    other.run_dir_.clear();
  }
  return *this;
}

UnusedRunDirCleanup::~UnusedRunDirCleanup() {
  remove_if_unused();
}

bool UnusedRunDirCleanup::remove_if_unused() {
  if (run_dir_.empty() || run_started()) return false;
  std::error_code ec;
  const bool failed = fs::exists(error_file_path(run_dir_, rank_), ec);
  if (!failed || !holds_only_bookkeeping(run_dir_)) return false;
  if (!remove_unused_run_dir(run_dir_)) return false;
  run_dir_.clear();
  return true;
}

}  // namespace lrhost::launch
