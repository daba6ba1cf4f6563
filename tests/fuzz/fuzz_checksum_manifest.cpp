// Fuzz target: a checkpoint's checksums.json, as `lrhost checkpoint verify` (verify_checksum_manifest,
// whole and split between processes) and resuming (the VerifiedReads scope) read it. The fuzzed
// manifest sits in a folder with fixed real files, so that a seed reaches the chunk comparisons and
// the nested manifests, not only the parser: ckpt/a.bin, ckpt/sub/b.bin and ckpt/sub/rank_0.checksums.json
// (a valid nested manifest of b.bin, as an FSDP rank writes for its shard). Beyond "no crash, no
// hang, only lrhost errors", two checkpoint-specific rules: no file outside the folder may be read
// (scratch/outside.bin is the canary a manifest could name as ../outside.bin), and a manifest that
// names itself must not recurse without end (libFuzzer's -timeout turns that into a finding).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "host/io/checksum_manifest.hpp"
#include "host/io/verified_reads.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {
namespace fs = std::filesystem;

// Fixed contents, also written by tests/fuzz/make_corpus.sh (its seeds carry their CRC32Cs).
std::string a_bin() {
  std::string bytes(200, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 37 + 11) & 0xff);
  return bytes;
}
std::string b_bin() {
  std::string bytes;
  for (int i = 0; i < 4; ++i) bytes += "lrhost fuzz shard 0\n";
  return bytes;
}

void put(const fs::path& file, const std::string& bytes) {
  lrhost::fuzz::write_bytes(file, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// A file name a check reports must stay inside the checkpoint folder: anything else means a file
// outside it was looked at (stat or read), which a damaged or hostile manifest must not achieve.
void require_inside(const std::string& name) {
  const fs::path normal = fs::path(name).lexically_normal();
  if (normal.is_absolute() || (!normal.empty() && *normal.begin() == "..")) {
    std::fprintf(stderr, "fuzz: the manifest reached %s, outside the checkpoint folder\n", name.c_str());
    std::abort();
  }
}

void require_inside(const lrhost::io::ManifestCheck& check) {
  for (const auto& name : check.verified) require_inside(name);
  for (const auto& mismatch : check.mismatches) require_inside(mismatch.file);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const fs::path dir = fuzz::scratch() / "ckpt";
  static const bool prepared = [&] {
    put(dir / "a.bin", a_bin());
    put(dir / "sub" / "b.bin", b_bin());
    // Written by the real writer, so the nested manifest is exactly what a rank writes (32-byte chunks:
    // b.bin has three, the last one partial).
    io::write_checksum_manifest(dir / "sub" / "rank_0.checksums.json", {"b.bin"}, {}, 32);
    put(fuzz::scratch() / "outside.bin", a_bin());  // same bytes as a.bin: a.bin's CRCs would match it
    return true;
  }();
  (void)prepared;
  static const bool verbose = std::getenv("LRHOST_FUZZ_VERBOSE") != nullptr;
  const fs::path manifest = dir / "checksums.json";
  fuzz::write_bytes(manifest, data, size);

  fuzz::expect_clean([&] {
    std::string text(reinterpret_cast<const char*>(data), size);
    (void)io::parse_checksum_manifest(text);
  });
  // verify_checksum_manifest reports a malformed manifest as a mismatch; it throws only when the
  // folder cannot be listed, which would be an lrhost error too.
  fuzz::expect_clean([&] {
    io::ManifestCheck check = io::verify_checksum_manifest(manifest);
    require_inside(check);
    for (const auto& mismatch : check.mismatches) (void)io::describe(mismatch);
    if (verbose)
      std::fprintf(stderr, "fuzz: verify: %zu verified, %zu mismatches%s\n", check.verified.size(),
                   check.mismatches.size(),
                   check.mismatches.empty() ? "" : (": " + io::describe(check.mismatches[0])).c_str());
    // Split as two processes of `lrhost checkpoint verify` split it: the other share is listed, unread.
    require_inside(
        io::verify_checksum_manifest(manifest, [](const std::string& file) { return file.rfind("sub/", 0) != 0; }));
    require_inside(
        io::verify_checksum_manifest(manifest, [](const std::string& file) { return file.rfind("sub/", 0) == 0; }));
  });
  // Resuming: the scope reads the manifests up front (ChecksumError when malformed), then checks each
  // file as a reader hands over its bytes.
  fuzz::expect_clean([&] {
    io::VerifiedReads scope(manifest);
    (void)scope.first_missing_or_resized();
    const std::string a = a_bin();
    io::VerifiedReads::check(dir / "a.bin", a.data(), a.size());
    // The canary's bytes as read, altered: a scope that listed ../outside.bin would reject them.
    const std::string altered = a.substr(0, 13);
    try {
      io::VerifiedReads::check(fuzz::scratch() / "outside.bin", altered.data(), altered.size());
    } catch (const io::ChecksumError&) {
      std::fprintf(stderr, "fuzz: VerifiedReads listed outside.bin, outside the checkpoint folder\n");
      std::abort();
    }
  });
  return 0;
}
