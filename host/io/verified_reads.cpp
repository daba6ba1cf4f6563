// Checksums verified in the reading pass (see verified_reads.hpp).
#include "host/io/verified_reads.hpp"

#include <algorithm>
#include <chrono>

#include "host/io/atomic_dir.hpp"

namespace lrhost::io {
namespace fs = std::filesystem;

namespace {

thread_local VerifiedReads* active_scope = nullptr;

}  // namespace

VerifiedReads::VerifiedReads(const fs::path& manifest) {
  std::error_code ec;
  if (fs::is_regular_file(manifest, ec)) {
    has_manifest_ = true;
    add_manifest(manifest, "", 0);
  }
  previous_ = active_scope;
  active_scope = this;
}

VerifiedReads::~VerifiedReads() {
  active_scope = previous_;
}

void VerifiedReads::add_manifest(const fs::path& manifest, const std::string& prefix, int depth) {
  const std::string shown = prefix + manifest.filename().string();
  if (depth > 4) throw ChecksumError(shown + ": malformed checksum manifest: manifests nested too deep");
  // A nested manifest is itself listed by the one naming it: check it as it is read, like any file.
  // The top one is read outside any scope (this one is not installed yet).
  const std::string text = read_text_file(manifest);
  if (depth > 0) {
    auto it = entries_.find(manifest_key(manifest));
    if (it != entries_.end()) check_bytes(it->first, it->second, text.data(), text.size());
  }
  ChecksumManifest parsed;
  try {
    parsed = parse_checksum_manifest(text);
  } catch (const std::exception& error) {
    throw ChecksumError(shown + ": malformed checksum manifest: " + error.what());
  }
  const fs::path root = manifest.parent_path();
  for (auto& [name, sums] : parsed.files)
    entries_[manifest_key(root / name)] = Entry{prefix + name, std::move(sums), parsed.chunk_bytes};
  for (const auto& nested : parsed.manifests) {
    const fs::path path = root / nested;
    if (!fs::is_regular_file(path)) throw ChecksumError(prefix + nested + ": missing (named by " + shown + ")");
    const std::string folder = fs::path(nested).parent_path().generic_string();
    add_manifest(path, prefix + (folder.empty() ? "" : folder + "/"), depth + 1);
  }
}

std::optional<std::string> VerifiedReads::first_missing_or_resized() const {
  for (const auto& [path, entry] : entries_) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return describe({entry.shown, 0, 0, "missing"});
    const uint64_t size = fs::file_size(path, ec);
    if (ec) return describe({entry.shown, 0, 0, "cannot be read: " + ec.message()});
    if (size != entry.expected.bytes)
      return describe(
          {entry.shown, std::min(size, entry.expected.bytes), std::max(size, entry.expected.bytes),
           "is " + std::to_string(size) + " bytes, the manifest says " + std::to_string(entry.expected.bytes)});
  }
  return std::nullopt;
}

void VerifiedReads::check_bytes(const std::string& key, const Entry& entry, const void* data, uint64_t size) {
  const auto start = std::chrono::steady_clock::now();
  auto mismatches =
      compare_checksums(entry.shown, entry.expected, checksums_of(data, size, entry.chunk_bytes), entry.chunk_bytes);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!mismatches.empty()) {
    std::string text = describe(mismatches.front());
    if (mismatches.size() > 1) text += " and " + std::to_string(mismatches.size() - 1) + " more chunk(s)";
    throw ChecksumError(text);
  }
  if (verified_.insert(key).second) bytes_ += size;
}

void VerifiedReads::check(const fs::path& file, const void* data, uint64_t size) {
  VerifiedReads* scope = active_scope;
  if (!scope) return;
  const std::string key = manifest_key(file);
  auto it = scope->entries_.find(key);
  if (it == scope->entries_.end() || scope->verified_.count(key)) return;
  scope->check_bytes(key, it->second, data, size);
}

}  // namespace lrhost::io
