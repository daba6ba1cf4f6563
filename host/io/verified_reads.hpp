// Checksums verified in the reading pass: while a VerifiedReads is alive on a thread, every file
// that read_safetensors or read_text_file (and so read_json_file) reads there, and that its checksum
// manifest lists, is checked against the manifest's chunk CRC32Cs on the bytes just read, before they
// are parsed. Resuming a checkpoint reads each file once this way instead of verifying the whole
// folder first and reading it again (at pi0 scale, tens of GB read twice); a file it does not read
// is not verified (`lrhost checkpoint verify` reads everything).
//
// Why a thread-local scope rather than a parameter: the checkpoint's files are read by a dozen
// readers in io/, optim/, ckpt/ and policy/ that take paths; threading a verifier through all of them
// would put checkpoint knowledge into each. The scope is installed by the one caller that needs it
// (ckpt::CheckpointManager::resume) and does nothing elsewhere.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "host/io/checksum_manifest.hpp"
#include "host/util/error.hpp"

namespace lrhost::io {

// A file whose bytes do not match its manifest (or a manifest that is malformed or does not match
// the manifest naming it): the message names the file and the byte range (io::describe).
class ChecksumError : public util::DataError {
  using util::DataError::DataError;
};

class VerifiedReads {
 public:
  // Reads `manifest` and every manifest it names (each nested one checked against the entry of the
  // manifest naming it). No such file: nothing is verified (has_manifest() is false). A malformed or
  // mismatching manifest: ChecksumError.
  explicit VerifiedReads(const std::filesystem::path& manifest);
  ~VerifiedReads();  // uninstalls (the previous scope of this thread, if any, is active again)
  VerifiedReads(const VerifiedReads&) = delete;
  VerifiedReads& operator=(const VerifiedReads&) = delete;

  bool has_manifest() const { return has_manifest_; }
  // The first listed file (in path order) that is missing or not the size its manifest says, as
  // io::describe writes it: a cheap check (one stat per file) that reads no data.
  std::optional<std::string> first_missing_or_resized() const;
  int files_verified() const { return static_cast<int>(verified_.size()); }
  uint64_t bytes_verified() const { return bytes_; }
  double seconds() const { return seconds_; }  // spent computing CRCs

  // What the readers call with a file's whole contents as read: a no-op unless a scope on this
  // thread lists `file`; ChecksumError when the bytes differ from its manifest.
  static void check(const std::filesystem::path& file, const void* data, uint64_t size);

 private:
  struct Entry {
    std::string shown;  // relative to the top manifest's folder, for messages
    FileChecksums expected;
    uint64_t chunk_bytes = 0;
  };
  void add_manifest(const std::filesystem::path& manifest, const std::string& prefix, int depth);
  void check_bytes(const std::string& key, const Entry& entry, const void* data, uint64_t size);

  bool has_manifest_ = false;
  std::map<std::string, Entry> entries_;  // by manifest_key
  std::set<std::string> verified_;        // by manifest_key
  uint64_t bytes_ = 0;
  double seconds_ = 0;
  VerifiedReads* previous_ = nullptr;
};

}  // namespace lrhost::io
