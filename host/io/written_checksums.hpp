// Checksums computed from the bytes as they are written, so that a checksum manifest written right
// afterwards (io/checksum_manifest.hpp) need not read the files back: a checkpoint's tensor files
// are hundreds of MB, and reading them again after writing them costs a second pass over the data.
// The write-side twin of io/verified_reads.hpp: a writer (io::write_safetensors) feeds the bytes it
// writes through a ChecksumStream and records the result in the WrittenChecksums scope active on
// its thread, if any; io::write_checksum_manifest, on the same thread, takes a recorded entry
// instead of reading the file. Without a scope nothing changes, and the manifest is the same either
// way (same chunks, same CRCs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "host/io/checksum_manifest.hpp"

namespace lrhost::io {

// CRC32C of each chunk_bytes chunk of a byte stream given in pieces of any size.
class ChecksumStream {
 public:
  explicit ChecksumStream(uint64_t chunk_bytes = kChecksumChunkBytes) : chunk_bytes_(chunk_bytes) {}
  void add(const void* data, std::size_t size);
  // The checksums of everything added (a last partial chunk included).
  FileChecksums finish();
  uint64_t chunk_bytes() const { return chunk_bytes_; }

 private:
  uint64_t chunk_bytes_;
  FileChecksums sums_;
  uint32_t crc_ = 0;
  uint64_t in_chunk_ = 0;
};

// While alive, the checksums of files written on this thread (by writers that record them) are kept,
// by path, for write_checksum_manifest. Scopes nest; only the innermost records.
class WrittenChecksums {
 public:
  WrittenChecksums();
  ~WrittenChecksums();  // uninstalls (the previous scope of this thread, if any, is active again)
  WrittenChecksums(const WrittenChecksums&) = delete;
  WrittenChecksums& operator=(const WrittenChecksums&) = delete;

  // True when a scope is active on this thread (a writer computes checksums only then).
  static bool active();
  // What a writer calls once `file` is complete and in place, with the stream of its bytes.
  static void record(const std::filesystem::path& file, ChecksumStream& stream);
  // The checksums recorded for `file` in this thread's scope with this chunk size, if any.
  static std::optional<FileChecksums> find(const std::filesystem::path& file, uint64_t chunk_bytes);

 private:
  struct Entry {
    uint64_t chunk_bytes = 0;
    FileChecksums sums;
  };
  std::map<std::string, Entry> files_;
  WrittenChecksums* previous_ = nullptr;
};

}  // namespace lrhost::io
