// Crash-safe file system steps for checkpoints: a folder is assembled under a temporary name next to
// its final place, every file and folder in it is fsynced, and only then is it renamed into place
// (rename is atomic on POSIX), so a reader sees either nothing or the whole folder. Files written
// alone go through a temporary file and rename too, and a symlink is replaced by renaming a new
// link over it. A process killed at any point leaves at most a temporary folder behind, which
// resume recognises by its name and removes.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::io {

// Writes `text` to `file` via `file`.tmp, fsync and rename; IoError naming the file on failure.
void write_file_atomic(const std::filesystem::path& file, const std::string& text);
// Reads a whole file; IoError naming it when it is missing or unreadable.
std::string read_text_file(const std::filesystem::path& file);
// Reads and parses a JSON file, keeping key order; DataError naming the file (and `hint`) when it is
// not valid JSON, IoError when it cannot be read.
nlohmann::ordered_json read_json_file(const std::filesystem::path& file, const std::string& hint);
// fsync of a file or a folder (a folder's fsync makes the names in it durable).
void fsync_path(const std::filesystem::path& path);
// fsync of every file and folder below `root`, then of `root` itself.
void fsync_tree(const std::filesystem::path& root);
// Removes a folder with everything in it, file by file, deepest first (std::filesystem::remove_all
// resolves to a broken copy exported by the pinned libtorch.so). Missing paths are fine.
void remove_tree(const std::filesystem::path& root);
// Points `link` at `target` (relative targets stay relative) by renaming a fresh link over it.
void replace_symlink(const std::filesystem::path& link, const std::filesystem::path& target);

// Prefix of temporary folders; names starting with it are never checkpoints.
inline constexpr const char* kTempPrefix = ".tmp-";

// A folder built under a temporary name and renamed to `final_path` by commit(); without a commit
// the destructor removes the temporary folder. An existing `final_path` is replaced (moved aside
// first, removed after the rename), so re-saving a step never leaves it half-written.
class AtomicDir {
 public:
  explicit AtomicDir(std::filesystem::path final_path);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;

  const std::filesystem::path& path() const { return temp_; }  // where to write
  // fsyncs the tree, renames it into place and fsyncs the parent folder.
  void commit();

 private:
  std::filesystem::path final_, temp_;
  bool committed_ = false;
};

}  // namespace lrhost::io
