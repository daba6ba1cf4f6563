// flock on the run folder's lock file, with the holder's identity written into the file.
#include "host/launch/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <string>

#include "host/launch/error_file.hpp"
#include "host/util/error.hpp"
#include "host/util/timestamp.hpp"

namespace lrhost::launch {
namespace {

std::string read_all(int fd) {
  std::string text;
  char buffer[512];
  for (off_t offset = 0;;) {
    ssize_t n = pread(fd, buffer, sizeof(buffer), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    offset += n;
    if (text.size() > 64 * 1024) break;  // a lock body is a few dozen bytes; never read a stray big file whole
  }
  return text;
}

// "pid 1234 on host gpu-node-3 (started 2025-03-01T14:05:09Z)", from the holder's lock body. The
// holder writes it right after taking the lock, so a reader can catch it empty for a moment.
std::string describe_holder(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("pid") && json["pid"].is_number_integer()) {
    std::string text = "pid " + std::to_string(json["pid"].get<long>());
    if (json.contains("host") && json["host"].is_string()) text += " on host " + json["host"].get<std::string>();
    if (json.contains("started") && json["started"].is_string())
      text += " (started " + json["started"].get<std::string>() + ")";
    return text;
  }
  return "a process that has not written its pid into the lock file yet";
}

void write_holder(int fd, const std::filesystem::path& path, const LockedFolderRole& role) {
  nlohmann::json body = {
      {"pid", static_cast<long>(getpid())}, {"host", host_name()}, {"started", util::utc_timestamp()}};
  std::string text = body.dump() + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    throw util::IoError("could not write the " + role.noun + "'s lock file '" + path.string() +
                        "': " + std::strerror(errno));
}

}  // namespace

RunDirLock RunDirLock::acquire(const std::filesystem::path& run_dir, const std::string& lock_name,
                               const LockedFolderRole& role) {
  std::filesystem::path path = run_dir / lock_name;
  // No O_CLOEXEC on purpose: the launcher's ranks inherit the descriptor, and with it the lock.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);  // NOLINT(android-cloexec-open)
  if (fd < 0)
    throw util::IoError(
        "could not open the " + role.noun + "'s lock file '" + path.string() + "': " + std::strerror(errno),
        "choose another folder with " + role.choose);
  int result = 0;
  do {
    result = flock(fd, LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    int error = errno;
    std::string holder = error == EWOULDBLOCK ? describe_holder(read_all(fd)) : std::string();
    ::close(fd);
    if (error == EWOULDBLOCK)
      throw util::ConfigError(role.noun + " '" + run_dir.string() + "' is in use by another job: " + holder +
                                  " holds its lock " + path.string(),
                              "wait for that job to finish or stop it, or choose another folder with " + role.choose);
    throw util::IoError(
        "could not lock the " + role.noun + "'s lock file '" + path.string() + "': " + std::strerror(error),
        "choose a " + role.noun + " on a file system with flock support (" + role.choose + ")");
  }
  RunDirLock lock(path, fd);
  write_holder(fd, path, role);
  return lock;
}

RunDirLock::RunDirLock(RunDirLock&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the flock
}

std::string lock_name_for_node(int node_rank) {
  return node_rank == 0 ? ".lock" : ".lock.node" + std::to_string(node_rank);
}

}  // namespace lrhost::launch
