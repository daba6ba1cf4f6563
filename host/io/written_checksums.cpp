// Checksums computed while writing (see written_checksums.hpp).
#include "host/io/written_checksums.hpp"

#include <algorithm>

#include "host/util/crc32c.hpp"

namespace lrhost::io {
namespace fs = std::filesystem;

namespace {

thread_local WrittenChecksums* written_scope = nullptr;

}  // namespace

void ChecksumStream::add(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const auto take = static_cast<std::size_t>(std::min<uint64_t>(size, chunk_bytes_ - in_chunk_));
    crc_ = util::crc32c_extend(crc_, bytes, take);
    bytes += take;
    size -= take;
    in_chunk_ += take;
    sums_.bytes += take;
    if (in_chunk_ == chunk_bytes_) {
      sums_.chunks.push_back(crc_);
      crc_ = 0;
      in_chunk_ = 0;
    }
  }
}

FileChecksums ChecksumStream::finish() {
  FileChecksums sums = sums_;
  if (in_chunk_ > 0) sums.chunks.push_back(crc_);
  return sums;
}

WrittenChecksums::WrittenChecksums() : previous_(written_scope) {
  written_scope = this;
}

WrittenChecksums::~WrittenChecksums() {
  written_scope = previous_;
}

bool WrittenChecksums::active() {
  return written_scope != nullptr;
}

void WrittenChecksums::record(const fs::path& file, ChecksumStream& stream) {
  if (written_scope) written_scope->files_[manifest_key(file)] = {stream.chunk_bytes(), stream.finish()};
}

std::optional<FileChecksums> WrittenChecksums::find(const fs::path& file, uint64_t chunk_bytes) {
  if (!written_scope) return std::nullopt;
  auto found = written_scope->files_.find(manifest_key(file));
  if (found == written_scope->files_.end() || found->second.chunk_bytes != chunk_bytes) return std::nullopt;
  return found->second.sums;
}

}  // namespace lrhost::io
