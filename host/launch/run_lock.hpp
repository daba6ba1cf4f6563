// The lock that makes a run folder belong to one job. The job's owner (the launcher, or the process
// itself when nothing launched it) holds an flock on <run_dir>/.lock for its whole life; a second
// job on the same folder fails at once, naming the holder's pid, host and start time, which the
// holder writes into the lock file. flock, not the file's existence, is the lock: the kernel drops
// it when the holder exits or dies, so a crashed job never blocks the next one. The descriptor is
// inherited by the launcher's ranks (no close-on-exec), so the folder stays locked while any
// process of the job may still write to it.
#pragma once
#include <filesystem>
#include <string>

namespace lrhost::launch {

// What a locked folder is to the job, for the errors: "run folder", chosen with "--run-dir DIR".
// The output folder (output_dir_lock.hpp) is locked the same way under its own name.
struct LockedFolderRole {
  std::string noun;    // "run folder"
  std::string choose;  // how to pick another one: "--run-dir DIR"
};
inline const LockedFolderRole kRunFolderRole{"run folder", "--run-dir DIR"};

class RunDirLock {
 public:
  // Locks `run_dir / lock_name` (the folder must exist). Throws util::ConfigError naming the folder
  // and the holder when another job holds it, util::IoError when the lock file cannot be used.
  static RunDirLock acquire(const std::filesystem::path& run_dir, const std::string& lock_name = ".lock",
                            const LockedFolderRole& role = kRunFolderRole);

  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock();  // releases the lock (the file stays: removing it would race with a new holder)

  const std::filesystem::path& path() const { return path_; }

 private:
  RunDirLock(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
};

// The lock file's name for one node of a launched job: ".lock" on node 0, ".lock.node<K>" on the
// others, so the nodes of one job sharing a run folder on a shared file system do not lock each
// other out, while two jobs on one node still do.
std::string lock_name_for_node(int node_rank);

}  // namespace lrhost::launch
