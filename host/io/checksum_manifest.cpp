// Checksum manifests (see checksum_manifest.hpp).
#include "host/io/checksum_manifest.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "host/io/atomic_dir.hpp"
#include "host/io/written_checksums.hpp"
#include "host/util/crc32c.hpp"
#include "host/util/error.hpp"

namespace lrhost::io {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

std::string hex(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

std::optional<uint32_t> parse_hex(const ordered_json& value) {
  if (!value.is_string() || value.get<std::string>().size() != 8) return std::nullopt;
  try {
    std::size_t used = 0;
    unsigned long crc = std::stoul(value.get<std::string>(), &used, 16);
    if (used != 8) return std::nullopt;
    return static_cast<uint32_t>(crc);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A path a manifest names must be inside its folder, spelled as list_files writes it ('/'-separated,
// no empty, "." or ".." part, no NUL): a damaged or hostile checkpoint must not make a verifier stat
// or read files outside it ("../x", "/etc/x"), and with one spelling per file a nested manifest cannot
// be named again under another name ("./checksums.json") to make verification recurse.
bool is_inside_path(const std::string& name) {
  if (name.empty() || name.find('\0') != std::string::npos) return false;
  for (std::size_t begin = 0;;) {
    const std::size_t end = name.find('/', begin);
    const std::string part = name.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string::npos) return true;
    begin = end + 1;
  }
}

using Select = std::function<bool(const std::string&)>;

// `visited`: the manifests already verified (relative to the top folder), so that one naming itself or
// an ancestor is reported once instead of being verified again at every level of nesting.
void verify_one(const fs::path& manifest, const std::string& prefix, ManifestCheck& check,
                std::set<std::string>& listed, std::set<std::string>& visited, int depth, const Select& select) {
  const std::string manifest_name = prefix + manifest.filename().string();
  ChecksumManifest parsed;
  try {
    parsed = parse_checksum_manifest(read_text_file(manifest));
  } catch (const std::exception& error) {
    check.mismatches.push_back({manifest_name, 0, 0, "malformed checksum manifest: " + std::string(error.what())});
    return;
  }
  const uint64_t chunk = parsed.chunk_bytes;
  const fs::path root = manifest.parent_path();
  listed.insert(manifest_name);
  for (const auto& [name, expected] : parsed.files) {
    const std::string shown = prefix + name;
    listed.insert(shown);
    if (select && !select(shown)) continue;
    std::error_code ec;
    const fs::path file = root / name;
    if (!fs::is_regular_file(file, ec)) {
      check.mismatches.push_back({shown, 0, 0, "missing"});
      continue;
    }
    const uint64_t size = fs::file_size(file, ec);
    if (size != expected.bytes) {
      check.mismatches.push_back(
          {shown, std::min(size, expected.bytes), std::max(size, expected.bytes),
           "is " + std::to_string(size) + " bytes, the manifest says " + std::to_string(expected.bytes)});
      continue;
    }
    FileChecksums actual;
    try {
      actual = file_checksums(file, chunk);
    } catch (const std::exception& error) {
      check.mismatches.push_back({shown, 0, 0, util::describe(error)});
      continue;
    }
    check.bytes += actual.bytes;
    auto differing = compare_checksums(shown, expected, actual, chunk);
    if (differing.empty()) check.verified.push_back(shown);
    check.mismatches.insert(check.mismatches.end(), differing.begin(), differing.end());
  }
  for (const auto& nested : parsed.manifests) {
    const fs::path path = root / nested;
    const std::string nested_prefix = prefix + fs::path(nested).parent_path().generic_string();
    if (depth > 4) {
      check.mismatches.push_back({manifest_name, 0, 0, "malformed checksum manifest: manifests nested too deep"});
      return;
    }
    if (!visited.insert(prefix + nested).second) {
      check.mismatches.push_back(
          {manifest_name, 0, 0,
           "malformed checksum manifest: names " + prefix + nested + ", which is already verified"});
      continue;
    }
    std::error_code ec;
    if (select && !select(prefix + nested)) {
      // Not this process's share: its files count as listed, unread.
      try {
        for (const auto& [name, entry] : parse_checksum_manifest(read_text_file(path)).files)
          listed.insert(nested_prefix.empty() ? name : nested_prefix + "/" + name);
      } catch (const std::exception&) {
      }
      listed.insert(prefix + nested);
      continue;
    }
    if (!fs::is_regular_file(path, ec)) {
      check.mismatches.push_back({prefix + nested, 0, 0, "missing"});
      continue;
    }
    verify_one(path, nested_prefix.empty() ? "" : nested_prefix + "/", check, listed, visited, depth + 1, select);
  }
}

}  // namespace

ChecksumManifest parse_checksum_manifest(const std::string& text) {
  ordered_json json;
  try {
    json = ordered_json::parse(text);
  } catch (const std::exception& error) {
    throw util::DataError(std::string("not valid JSON (") + error.what() + ")");
  }
  // json["algorithm"] == "crc32c", not json.value(...): value() throws nlohmann's type_error when
  // "algorithm" is present but not a string, and a malformed manifest must be a DataError.
  if (!json.is_object() || !json.contains("algorithm") || json["algorithm"] != "crc32c" || !json.contains("files") ||
      !json["files"].is_object() || !json.contains("chunk_bytes") || !json["chunk_bytes"].is_number_unsigned() ||
      json["chunk_bytes"].get<uint64_t>() == 0)
    throw util::DataError("expected {algorithm: \"crc32c\", chunk_bytes, files}");
  if (!json.contains("format") || !json["format"].is_number_integer())
    throw util::DataError("expected an integer \"format\"");
  if (json["format"].get<int64_t>() > kChecksumFormat)
    throw util::DataError("format " + json["format"].dump() + " is newer than this lrhost reads (" +
                          std::to_string(kChecksumFormat) + ")");
  ChecksumManifest manifest;
  manifest.chunk_bytes = json["chunk_bytes"].get<uint64_t>();
  for (const auto& [name, entry] : json["files"].items()) {
    if (!is_inside_path(name))
      throw util::DataError("\"files\" names " + name + ", not a path inside the manifest's folder");
    if (!entry.is_object() || !entry.contains("bytes") || !entry["bytes"].is_number_unsigned() ||
        !entry.contains("crc32c") || !entry["crc32c"].is_array())
      throw util::DataError("the entry of " + name + " is not {bytes, crc32c: [...]}");
    FileChecksums sums;
    sums.bytes = entry["bytes"].get<uint64_t>();
    const uint64_t n_chunks = sums.bytes / manifest.chunk_bytes + (sums.bytes % manifest.chunk_bytes != 0);
    if (entry["crc32c"].size() != n_chunks)
      throw util::DataError(name + " has " + std::to_string(entry["crc32c"].size()) + " chunk CRCs for " +
                            std::to_string(n_chunks) + " chunks");
    for (const auto& crc : entry["crc32c"]) {
      auto value = parse_hex(crc);
      if (!value) throw util::DataError(name + ": " + crc.dump() + " is not 8 hex digits");
      sums.chunks.push_back(*value);
    }
    manifest.files.emplace(name, std::move(sums));
  }
  if (json.contains("manifests")) {
    if (!json["manifests"].is_array()) throw util::DataError("\"manifests\" is not a list");
    for (const auto& nested : json["manifests"]) {
      if (!nested.is_string()) throw util::DataError("\"manifests\" holds a non-string");
      const std::string& name = nested.get_ref<const std::string&>();
      if (!is_inside_path(name))
        throw util::DataError("\"manifests\" names " + name + ", not a path inside the manifest's folder");
      if (std::find(manifest.manifests.begin(), manifest.manifests.end(), name) != manifest.manifests.end())
        throw util::DataError("\"manifests\" names " + name + " twice");
      manifest.manifests.push_back(name);
    }
  }
  return manifest;
}

std::vector<ChecksumMismatch> compare_checksums(const std::string& shown, const FileChecksums& expected,
                                                const FileChecksums& actual, uint64_t chunk_bytes) {
  if (actual.bytes != expected.bytes)
    return {{shown, std::min(actual.bytes, expected.bytes), std::max(actual.bytes, expected.bytes),
             "is " + std::to_string(actual.bytes) + " bytes, the manifest says " + std::to_string(expected.bytes)}};
  std::vector<ChecksumMismatch> mismatches;
  const uint64_t n_chunks = expected.chunks.size();
  for (uint64_t i = 0; i < n_chunks; ++i)
    if (i >= actual.chunks.size() || actual.chunks[i] != expected.chunks[i]) {
      const uint64_t begin = i * chunk_bytes, end = std::min(expected.bytes, begin + chunk_bytes);
      mismatches.push_back(
          {shown, begin, end,
           "data does not match (chunk " + std::to_string(i) + " of " + std::to_string(n_chunks) + ")"});
    }
  return mismatches;
}

FileChecksums checksums_of(const void* data, uint64_t size, uint64_t chunk_bytes) {
  FileChecksums sums;
  sums.bytes = size;
  const auto* bytes = static_cast<const unsigned char*>(data);
  // Chunks are independent CRCs, so they are computed on the intra-op threads (one core checksums
  // ~4 GB/s; a GPU host's many cores keep verification below its disks' speed).
  sums.chunks.resize(static_cast<std::size_t>(size / chunk_bytes + (size % chunk_bytes != 0)));
  at::parallel_for(0, static_cast<int64_t>(sums.chunks.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const uint64_t begin = static_cast<uint64_t>(i) * chunk_bytes;
      sums.chunks[static_cast<std::size_t>(i)] =
          util::crc32c_extend(0, bytes + begin, static_cast<std::size_t>(std::min(chunk_bytes, size - begin)));
    }
  });
  return sums;
}

FileChecksums file_checksums(const fs::path& file, uint64_t chunk_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw util::IoError("cannot read " + file.string());
  ChecksumStream stream(chunk_bytes);
  std::vector<char> buffer(std::min<uint64_t>(chunk_bytes, uint64_t{1} << 20));
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    stream.add(buffer.data(), got);
  }
  if (in.bad()) throw util::IoError("error reading " + file.string());
  return stream.finish();
}

std::string manifest_key(const fs::path& file) {
  std::error_code ec;
  fs::path absolute = fs::absolute(file, ec);
  if (ec) return file.lexically_normal().string();
  fs::path key = fs::weakly_canonical(absolute, ec);
  return (ec ? absolute.lexically_normal() : key).string();
}

std::vector<std::string> list_files(const fs::path& root) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path().lexically_relative(root).generic_string());
  if (ec) throw util::IoError("cannot list " + root.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

void write_checksum_manifest(const fs::path& manifest, const std::vector<std::string>& files,
                             const std::vector<std::string>& manifests, uint64_t chunk_bytes) {
  ordered_json json;
  json["format"] = kChecksumFormat;
  json["algorithm"] = "crc32c";
  json["chunk_bytes"] = chunk_bytes;
  ordered_json entries = ordered_json::object();
  for (const auto& name : files) {
    // A file written under a WrittenChecksums scope was checksummed as it was written: not read again.
    const fs::path file = manifest.parent_path() / name;
    std::optional<FileChecksums> written = WrittenChecksums::find(file, chunk_bytes);
    const FileChecksums sums = written ? std::move(*written) : file_checksums(file, chunk_bytes);
    ordered_json crcs = ordered_json::array();
    for (uint32_t crc : sums.chunks) crcs.push_back(hex(crc));
    entries[name] = {{"bytes", sums.bytes}, {"crc32c", std::move(crcs)}};
  }
  json["files"] = std::move(entries);
  if (!manifests.empty()) json["manifests"] = manifests;
  write_file_atomic(manifest, json.dump(1));
}

std::string describe(const ChecksumMismatch& mismatch) {
  std::string text = mismatch.file + ": ";
  if (mismatch.end > mismatch.begin)
    text += "bytes " + std::to_string(mismatch.begin) + "-" + std::to_string(mismatch.end - 1) + " ";
  return text + mismatch.what;
}

ManifestCheck verify_checksum_manifest(const fs::path& manifest, const Select& select) {
  ManifestCheck check;
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return check;
  check.has_manifest = true;
  std::set<std::string> listed, visited{manifest.filename().string()};
  verify_one(manifest, "", check, listed, visited, 0, select);
  for (const auto& file : list_files(manifest.parent_path()))
    if (!listed.count(file)) check.unlisted.push_back(file);
  return check;
}

}  // namespace lrhost::io
