// The output folder's lock, shared by the claims of one process; see output_dir_lock.hpp.
#include "host/launch/output_dir_lock.hpp"

#include <map>
#include <mutex>
#include <string>

#include "host/util/error.hpp"

namespace lrhost::launch {

std::shared_ptr<const RunDirLock> claim_output_dir(const std::filesystem::path& output_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec)
    throw util::IoError("could not create the output folder '" + output_dir.string() + "': " + ec.message(),
                        "choose another output_dir=DIR");
  // One key per folder however it is spelled, so a second claim in this process finds the first
  // (a second flock here would conflict with our own).
  std::string key = fs::weakly_canonical(fs::absolute(output_dir)).string();
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const RunDirLock>> held;
  std::lock_guard guard(mutex);
  if (auto lock = held[key].lock()) return lock;
  static const LockedFolderRole role{"output folder", "output_dir=DIR"};
  auto lock = std::make_shared<const RunDirLock>(RunDirLock::acquire(key, kOutputDirLockName, role));
  held[key] = lock;
  return lock;
}

}  // namespace lrhost::launch
