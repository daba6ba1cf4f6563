// Checksum manifests: a JSON file listing, for each file of a folder, its size and the CRC32C of
// each chunk of it, so that silent corruption (a flipped bit on disk or in a copy) is detected and
// named down to the byte range of one chunk. Used for checkpoints (ckpt/checkpoint_manager.hpp).
//
// Why CRC32C: it is already in the tree (util/crc32c.hpp), the SSE4.2 crc32 instruction computes it
// at several GB/s (faster than the disks checkpoints live on, so verifying costs one read), and a
// 32-bit CRC per 8 MiB chunk detects every single-bit and burst error up to 32 bits and misses
// random damage with probability 2^-32 per chunk. It is not a security hash: it protects against
// accidents, not against someone who rewrites both the data and the manifest.
//
//   {"format": 1, "algorithm": "crc32c", "chunk_bytes": 8388608,
//    "files": {"pretrained_model/model.safetensors": {"bytes": 123, "crc32c": ["0a1b2c3d", ...]}, ...},
//    "manifests": ["training_state/fsdp_shards/rank_0.checksums.json", ...]}
//
// Paths are relative to the folder holding the manifest, '/'-separated. "manifests" (optional) names
// further manifests (relative to the same folder) whose files are verified with it: FSDP ranks each
// write one for their own shard file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::io {

inline constexpr int kChecksumFormat = 1;
inline constexpr uint64_t kChecksumChunkBytes = uint64_t{8} << 20;

struct FileChecksums {
  uint64_t bytes = 0;
  std::vector<uint32_t> chunks;  // CRC32C of bytes [i * chunk, min((i + 1) * chunk, bytes))
};

// Reads `file` once. IoError when it cannot be read.
FileChecksums file_checksums(const std::filesystem::path& file, uint64_t chunk_bytes = kChecksumChunkBytes);
// The same over bytes in memory (the chunks on the intra-op threads).
FileChecksums checksums_of(const void* data, uint64_t size, uint64_t chunk_bytes = kChecksumChunkBytes);

// One manifest file as written by write_checksum_manifest (its nested manifests are not read).
struct ChecksumManifest {
  uint64_t chunk_bytes = kChecksumChunkBytes;
  std::map<std::string, FileChecksums> files;  // by path relative to the manifest's folder
  std::vector<std::string> manifests;          // nested manifests, relative to the same folder
};
// Parses `text` (the contents of a manifest); the error text says what is malformed.
ChecksumManifest parse_checksum_manifest(const std::string& text);

// Writes `manifest` (atomically, fsynced) covering `files` (relative to the manifest's folder) and
// naming the nested `manifests`.
void write_checksum_manifest(const std::filesystem::path& manifest, const std::vector<std::string>& files,
                             const std::vector<std::string>& manifests = {},
                             uint64_t chunk_bytes = kChecksumChunkBytes);

// The one key by which a file is looked up among checksums (those a manifest lists, those computed
// while writing): absolute, normalized, symlinks resolved (weakly_canonical: the file need not exist
// yet), so "out/./a", "a" from inside out/ and a symlinked out/ all name the same entry.
std::string manifest_key(const std::filesystem::path& file);

// Every regular file under `root`, relative and '/'-separated, sorted.
std::vector<std::string> list_files(const std::filesystem::path& root);

struct ChecksumMismatch {
  std::string file;             // relative to the top manifest's folder
  uint64_t begin = 0, end = 0;  // the byte range that differs (a whole chunk); begin == end: n/a
  std::string what;             // "data does not match", "missing", "is N bytes, the manifest says M"
};
// "pretrained_model/model.safetensors: bytes 0-8388607 (chunk 0 of 2): data does not match".
std::string describe(const ChecksumMismatch& mismatch);
// Where `actual` differs from `expected` (its size, or each differing chunk), as mismatches of `shown`.
std::vector<ChecksumMismatch> compare_checksums(const std::string& shown, const FileChecksums& expected,
                                                const FileChecksums& actual, uint64_t chunk_bytes);

struct ManifestCheck {
  bool has_manifest = false;          // false: nothing was verified (no manifest file)
  std::vector<std::string> verified;  // files whose every chunk matched
  std::vector<ChecksumMismatch> mismatches;
  std::vector<std::string> unlisted;  // files under the folder no manifest lists (not an error)
  uint64_t bytes = 0;                 // bytes read
  bool ok() const { return has_manifest && mismatches.empty(); }
};
// Reads `manifest` (and the manifests it names) and checks every file it lists; `root` is its
// folder. A malformed manifest is a mismatch of the manifest itself. With `select`, only the files
// (and nested manifests) for which it returns true are read, by their path relative to the top
// manifest's folder: several processes can split one verification between them.
ManifestCheck verify_checksum_manifest(const std::filesystem::path& manifest,
                                       const std::function<bool(const std::string&)>& select = {});

}  // namespace lrhost::io
