// Atomic folders, files and symlinks with fsync; see atomic_dir.hpp.
#include "host/io/atomic_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "host/io/verified_reads.hpp"
#include "host/util/error.hpp"

namespace lrhost::io {
namespace fs = std::filesystem;

void write_file_atomic(const fs::path& file, const std::string& text) {
  fs::path temporary = file;
  temporary += ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw util::IoError("cannot create " + temporary.string() + ": " + std::strerror(errno));
  const char* cursor = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t written = ::write(fd, cursor, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temporary.c_str());
      throw util::IoError("cannot write " + temporary.string() + ": " + reason);
    }
    cursor += written;
    left -= static_cast<std::size_t>(written);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temporary.c_str());
    throw util::IoError("cannot flush " + temporary.string());
  }
  if (::rename(temporary.c_str(), file.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw util::IoError("cannot rename " + temporary.string() + " to " + file.string() + ": " + reason);
  }
}

std::string read_text_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw util::IoError(file.string() + ": file not found");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw util::IoError(file.string() + ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw util::IoError(file.string() + ": read error");
  std::string bytes = text.str();
  VerifiedReads::check(file, bytes.data(), bytes.size());  // under a VerifiedReads scope (resume)
  return bytes;
}

nlohmann::ordered_json read_json_file(const fs::path& file, const std::string& hint) {
  std::string text = read_text_file(file);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw util::DataError(file.string() + ": not valid JSON (" + error.what() + ")", hint);
  }
}

void fsync_path(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw util::IoError("cannot open " + path.string() + " to flush it: " + std::strerror(errno));
  int status = ::fsync(fd);
  ::close(fd);
  if (status != 0) throw util::IoError("cannot flush " + path.string() + ": " + std::strerror(errno));
}

void fsync_tree(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (!it->is_symlink()) fsync_path(it->path());
  if (ec) throw util::IoError("cannot list " + root.string() + ": " + ec.message());
  fsync_path(root);
}

void remove_tree(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(root, ec))) return;
  if (fs::is_symlink(fs::symlink_status(root, ec)) || !fs::is_directory(root, ec)) {
    fs::remove(root, ec);
    return;
  }
  std::vector<fs::path> entries;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    entries.push_back(it->path());
  std::sort(entries.begin(), entries.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  for (const fs::path& entry : entries) fs::remove(entry, ec);
  fs::remove(root, ec);
  if (fs::exists(fs::symlink_status(root, ec))) throw util::IoError("cannot remove " + root.string());
}

void replace_symlink(const fs::path& link, const fs::path& target) {
  fs::path temporary = link;
  temporary += ".tmp" + std::to_string(::getpid());
  ::unlink(temporary.c_str());
  if (::symlink(target.c_str(), temporary.c_str()) != 0)
    throw util::IoError("cannot create the symlink " + temporary.string() + ": " + std::strerror(errno));
  if (::rename(temporary.c_str(), link.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw util::IoError("cannot move the symlink " + link.string() + " to " + target.string() + ": " + reason);
  }
  fsync_path(link.parent_path().empty() ? fs::path(".") : link.parent_path());
}

AtomicDir::AtomicDir(fs::path final_path) : final_(std::move(final_path)) {
  temp_ =
      final_.parent_path() / (std::string(kTempPrefix) + final_.filename().string() + "-" + std::to_string(::getpid()));
  remove_tree(temp_);
  std::error_code ec;
  fs::create_directories(temp_, ec);
  if (ec) throw util::IoError("cannot create " + temp_.string() + ": " + ec.message());
}

AtomicDir::~AtomicDir() {
  if (committed_) return;
  try {
    remove_tree(temp_);
  } catch (...) {
    // A leftover temporary folder is harmless: resume recognises and removes it.
  }
}

void AtomicDir::commit() {
  fsync_tree(temp_);
  std::error_code ec;
  fs::path aside;
  if (fs::exists(fs::symlink_status(final_, ec))) {
    aside = final_.parent_path() /
            (std::string(kTempPrefix) + "old-" + final_.filename().string() + "-" + std::to_string(::getpid()));
    remove_tree(aside);
    if (::rename(final_.c_str(), aside.c_str()) != 0)
      throw util::IoError("cannot move the old " + final_.string() + " aside: " + std::strerror(errno));
  }
  if (::rename(temp_.c_str(), final_.c_str()) != 0)
    throw util::IoError("cannot rename " + temp_.string() + " to " + final_.string() + ": " + std::strerror(errno));
  committed_ = true;
  fsync_path(final_.parent_path());
  if (!aside.empty()) remove_tree(aside);
}

}  // namespace lrhost::io
