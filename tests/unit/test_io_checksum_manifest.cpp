// Unit tests of checksum manifests (host/io/checksum_manifest.hpp) and the shared CRC32C
// (host/util/crc32c.hpp): chunked CRCs, byte ranges of mismatches, size changes, nested per-rank
// manifests (as FSDP ranks write for their shard files) with 100 single-bit flips, malformed manifests
// (paths outside the folder, a manifest naming itself);
// checksums computed while writing (host/io/written_checksums.hpp) equal to reading the file back.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "host/io/atomic_dir.hpp"
#include "host/io/checksum_manifest.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/verified_reads.hpp"
#include "host/io/written_checksums.hpp"
#include "host/util/crc32c.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::test::contains;
using lrhost::test::described_error;
using lrhost::test::flip_bit;
using lrhost::test::TempDir;

namespace {

void write_bytes(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << bytes;
}

std::string random_bytes(std::size_t size, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string bytes(size, '\0');
  for (auto& c : bytes) c = static_cast<char>(random());
  return bytes;
}

}  // namespace

TEST_CASE("crc32c: the hardware and table paths agree, and extend continues a CRC") {
  CHECK(lrhost::util::crc32c("123456789") == 0xE3069283u);
  const std::string data = random_bytes(1000, 1);
  for (std::size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    uint32_t crc = lrhost::util::crc32c(data.substr(0, cut));
    CHECK(lrhost::util::crc32c_extend(crc, data.data() + cut, data.size() - cut) == lrhost::util::crc32c(data));
  }
}

TEST_CASE("checksum manifest: chunks name the byte range; sizes, missing files and unlisted files") {
  TempDir dir("manifest");
  write_bytes(dir / "a.bin", random_bytes(1000, 2));
  write_bytes(dir / "sub/b.bin", random_bytes(10, 3));
  lrhost::io::write_checksum_manifest(dir / "sums.json", {"a.bin", "sub/b.bin"}, {}, 256);
  auto check = lrhost::io::verify_checksum_manifest(dir / "sums.json");
  CHECK(check.ok());
  CHECK((check.verified.size() == 2));
  CHECK((check.bytes == 1010));
  flip_bit(dir / "a.bin", 600, 3);  // chunk 2: bytes 512-767
  check = lrhost::io::verify_checksum_manifest(dir / "sums.json");
  REQUIRE((check.mismatches.size() == 1));
  CHECK((lrhost::io::describe(check.mismatches[0]) == "a.bin: bytes 512-767 data does not match (chunk 2 of 4)"));
  flip_bit(dir / "a.bin", 600, 3);
  write_bytes(dir / "sub/b.bin", "short");
  write_bytes(dir / "extra.txt", "x");
  check = lrhost::io::verify_checksum_manifest(dir / "sums.json");
  REQUIRE((check.mismatches.size() == 1));
  CHECK(contains(lrhost::io::describe(check.mismatches[0]), "sub/b.bin: bytes 5-9 is 5 bytes, the manifest says 10"));
  CHECK((check.unlisted == std::vector<std::string>{"extra.txt"}));
  fs::remove(dir / "sub/b.bin");
  check = lrhost::io::verify_checksum_manifest(dir / "sums.json");
  REQUIRE((check.mismatches.size() == 1));
  CHECK((lrhost::io::describe(check.mismatches[0]) == "sub/b.bin: missing"));
  // No manifest: nothing verified, nothing wrong.
  CHECK_FALSE(lrhost::io::verify_checksum_manifest(dir / "none.json").has_manifest);
  // A malformed manifest is a mismatch of the manifest itself.
  write_bytes(dir / "bad.json", "{\"files\": 3}");
  check = lrhost::io::verify_checksum_manifest(dir / "bad.json");
  REQUIRE_FALSE(check.mismatches.empty());
  CHECK(contains(lrhost::io::describe(check.mismatches[0]), "malformed checksum manifest"));
}

TEST_CASE(
    "checksum manifest: per-rank shard manifests named by the top one; 100 bit flips in shard data, 100 detected") {
  TempDir dir("manifest_shards");
  const std::string shards = "training_state/fsdp_shards/";
  // Each "rank" checksums its own shard file in its own manifest; the top manifest covers the rest.
  for (int r = 0; r < 2; ++r) {
    const std::string name = "rank_" + std::to_string(r) + ".safetensors";
    write_bytes(dir / shards / name, random_bytes(3000, 10 + r));
    lrhost::io::write_checksum_manifest(dir / shards / ("rank_" + std::to_string(r) + ".checksums.json"), {name}, {},
                                        1024);
  }
  write_bytes(dir / "pretrained_model/model.safetensors", random_bytes(100, 4));
  lrhost::io::write_checksum_manifest(
      dir / "checksums.json",
      {"pretrained_model/model.safetensors", shards + "rank_0.checksums.json", shards + "rank_1.checksums.json"},
      {shards + "rank_0.checksums.json", shards + "rank_1.checksums.json"});
  auto check = lrhost::io::verify_checksum_manifest(dir / "checksums.json");
  CHECK(check.ok());
  CHECK(check.unlisted.empty());
  CHECK((check.verified.size() == 5));
  std::mt19937_64 random(34);
  int detected = 0;
  for (int i = 0; i < 100; ++i) {
    const int r = static_cast<int>(random() % 2);
    const uint64_t offset = random() % 3000;
    const int bit = static_cast<int>(random() % 8);
    const fs::path file = dir / shards / ("rank_" + std::to_string(r) + ".safetensors");
    flip_bit(file, offset, bit);
    check = lrhost::io::verify_checksum_manifest(dir / "checksums.json");
    const uint64_t begin = offset / 1024 * 1024, end = std::min<uint64_t>(begin + 1024, 3000) - 1;
    if (check.mismatches.size() == 1 && lrhost::io::describe(check.mismatches[0])
                                                .rfind(shards + "rank_" + std::to_string(r) + ".safetensors: bytes " +
                                                           std::to_string(begin) + "-" + std::to_string(end),
                                                       0) == 0)
      ++detected;
    flip_bit(file, offset, bit);
  }
  CHECK((detected == 100));
  CHECK(lrhost::io::verify_checksum_manifest(dir / "checksums.json").ok());

  // Split between two "ranks" (rank_1's shard and manifest on one, everything else on the other):
  // each file is read by exactly one, none is reported unlisted, and a flip is found by its reader.
  auto mine = [&](int rank) {
    return [rank](const std::string& file) { return (file.find("rank_1.") != std::string::npos) == (rank == 1); };
  };
  auto zero = lrhost::io::verify_checksum_manifest(dir / "checksums.json", mine(0));
  auto one = lrhost::io::verify_checksum_manifest(dir / "checksums.json", mine(1));
  CHECK((zero.verified.size() + one.verified.size() == 5));
  CHECK((one.verified == std::vector<std::string>{shards + "rank_1.checksums.json", shards + "rank_1.safetensors"}));
  CHECK(zero.unlisted.empty());
  CHECK(one.unlisted.empty());
  flip_bit(dir / shards / "rank_1.safetensors", 5, 0);
  CHECK(lrhost::io::verify_checksum_manifest(dir / "checksums.json", mine(0)).ok());
  CHECK_FALSE(lrhost::io::verify_checksum_manifest(dir / "checksums.json", mine(1)).ok());
}

// Found by tests/fuzz/fuzz_checksum_manifest.cpp: a manifest naming "../outside.bin" made the verifier
// read a file outside the checkpoint folder, and one naming itself under several spellings
// ("./checksums.json", ".//checksums.json") was verified again at each of 5 nesting levels, N^5 times
// over (12 spellings: a hang).
TEST_CASE("checksum manifest: paths outside the folder and a manifest naming itself are malformed, read nothing") {
  TempDir dir("manifest_hostile");
  write_bytes(dir / "outside.bin", random_bytes(100, 5));
  write_bytes(dir / "ckpt/a.bin", random_bytes(100, 5));
  char a_crc[9];
  std::snprintf(a_crc, sizeof a_crc, "%08x", lrhost::io::file_checksums(dir / "ckpt/a.bin").chunks.at(0));
  auto manifest = [](const std::string& files, const std::string& manifests) {
    return "{\"format\": 1, \"algorithm\": \"crc32c\", \"chunk_bytes\": 8388608, \"files\": {" + files +
           "}, \"manifests\": [" + manifests + "]}";
  };
  const std::string a_entry = "{\"bytes\": 100, \"crc32c\": [\"" + std::string(a_crc) + "\"]}";
  REQUIRE(lrhost::io::parse_checksum_manifest(manifest("\"a.bin\": " + a_entry, "")).files.count("a.bin"));
  for (const std::string name :
       {"../outside.bin", "/etc/hostname", "./a.bin", "sub//a.bin", "sub/", "", "sub/../a.bin"}) {
    CAPTURE(name);
    CHECK(contains(described_error<lrhost::util::DataError>(
                       [&] { lrhost::io::parse_checksum_manifest(manifest("\"" + name + "\": " + a_entry, "")); }),
                   "not a path inside the manifest's folder"));
    CHECK(contains(described_error<lrhost::util::DataError>(
                       [&] { lrhost::io::parse_checksum_manifest(manifest("", "\"" + name + "\"")); }),
                   "not a path inside the manifest's folder"));
  }
  CHECK(contains(described_error<lrhost::util::DataError>(
                     [&] { lrhost::io::parse_checksum_manifest(manifest("", "\"x.json\", \"x.json\"")); }),
                 "names x.json twice"));
  // "algorithm" not a string: a DataError, not nlohmann's type_error (also found by the fuzzer).
  CHECK(contains(described_error<lrhost::util::DataError>([&] {
                   lrhost::io::parse_checksum_manifest(
                       "{\"format\": 1, \"algorithm\": [], \"chunk_bytes\": 1, \"files\": {}}");
                 }),
                 "expected {algorithm: \"crc32c\", chunk_bytes, files}"));
  // The whole verification: the out-of-folder file (same bytes, same CRC) is neither verified nor read.
  write_bytes(dir / "ckpt/checksums.json", manifest("\"../outside.bin\": " + a_entry, ""));
  auto check = lrhost::io::verify_checksum_manifest(dir / "ckpt/checksums.json");
  CHECK(check.verified.empty());
  CHECK((check.bytes == 0));
  REQUIRE((check.mismatches.size() == 1));
  CHECK(contains(lrhost::io::describe(check.mismatches[0]), "checksums.json: malformed checksum manifest"));
  CHECK(contains(
      described_error<lrhost::io::ChecksumError>([&] { lrhost::io::VerifiedReads bad(dir / "ckpt/checksums.json"); }),
      "not a path inside the manifest's folder"));
  // Twelve spellings of itself: rejected at once.
  std::string aliases = "\"checksums.json\"";
  for (int k = 1; k < 12; ++k) aliases += ", \"." + std::string(k, '/') + "checksums.json\"";
  write_bytes(dir / "ckpt/checksums.json", manifest("\"a.bin\": " + a_entry, aliases));
  check = lrhost::io::verify_checksum_manifest(dir / "ckpt/checksums.json");
  CHECK(check.verified.empty());
  REQUIRE((check.mismatches.size() == 1));
  // Itself under its one spelling, and a nested manifest naming its parent's manifest: reported once
  // each, every file verified once.
  write_bytes(dir / "ckpt/checksums.json", manifest("\"a.bin\": " + a_entry, "\"checksums.json\""));
  check = lrhost::io::verify_checksum_manifest(dir / "ckpt/checksums.json");
  CHECK((check.verified == std::vector<std::string>{"a.bin"}));
  REQUIRE((check.mismatches.size() == 1));
  CHECK((lrhost::io::describe(check.mismatches[0]) ==
         "checksums.json: malformed checksum manifest: names checksums.json, which is already verified"));
  write_bytes(dir / "ckpt/sub/b.bin", random_bytes(10, 6));
  lrhost::io::write_checksum_manifest(dir / "ckpt/sub/b.json", {"b.bin"}, {"b.json"});
  write_bytes(dir / "ckpt/checksums.json", manifest("\"a.bin\": " + a_entry, "\"sub/b.json\""));
  check = lrhost::io::verify_checksum_manifest(dir / "ckpt/checksums.json");
  CHECK((check.verified == std::vector<std::string>{"a.bin", "sub/b.bin"}));
  REQUIRE((check.mismatches.size() == 1));
  CHECK(
      contains(lrhost::io::describe(check.mismatches[0]), "sub/b.json: malformed checksum manifest: names sub/b.json"));
}

TEST_CASE("written checksums: a stream in pieces equals one pass, and a file's write equals reading it back") {
  const std::string data = random_bytes(1000, 9);
  lrhost::io::ChecksumStream stream(256);
  for (std::size_t begin = 0, piece = 1; begin < data.size(); begin += piece, piece = piece * 3 + 1)
    stream.add(data.data() + begin, std::min(piece, data.size() - begin));
  auto pieces = stream.finish();
  auto whole = lrhost::io::checksums_of(data.data(), data.size(), 256);
  CHECK(pieces.bytes == 1000);
  CHECK(pieces.chunks == whole.chunks);

  // A tensor file of more than one 8 MiB chunk, written under a scope: the manifest it then writes
  // takes the recorded checksums and is byte-identical to one that reads the file back.
  TempDir dir("written");
  const fs::path file = dir / "t.safetensors";
  std::string with_scope;
  {
    lrhost::io::WrittenChecksums scope;
    lrhost::io::write_safetensors(file, {{"x", torch::arange(int64_t{2600000}, torch::kFloat32)}});
    auto recorded =
        lrhost::io::WrittenChecksums::find(dir.path / "." / "t.safetensors", lrhost::io::kChecksumChunkBytes);
    REQUIRE(recorded);
    auto read_back = lrhost::io::file_checksums(file);
    CHECK(recorded->bytes == read_back.bytes);
    CHECK(recorded->chunks.size() == 2);
    CHECK(recorded->chunks == read_back.chunks);
    // Another chunk size was not recorded: the manifest reads the file.
    CHECK_FALSE(lrhost::io::WrittenChecksums::find(file, 256));
    lrhost::io::write_checksum_manifest(dir / "sums.json", {"t.safetensors"});
    with_scope = lrhost::io::read_text_file(dir / "sums.json");
  }
  CHECK_FALSE(lrhost::io::WrittenChecksums::find(file, lrhost::io::kChecksumChunkBytes));
  lrhost::io::write_checksum_manifest(dir / "sums.json", {"t.safetensors"});
  CHECK(lrhost::io::read_text_file(dir / "sums.json") == with_scope);
  CHECK(lrhost::io::verify_checksum_manifest(dir / "sums.json").ok());
}

TEST_CASE("manifest key: one key for every spelling of a file, through a symlinked folder too, written and read") {
  TempDir dir("manifest_key");
  fs::create_directories(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  using lrhost::io::manifest_key;
  const std::string key = manifest_key(dir / "real" / "t.safetensors");  // not written yet
  CHECK(manifest_key(dir / "real" / "." / "t.safetensors") == key);
  CHECK(manifest_key(dir / "link" / "t.safetensors") == key);
  CHECK(manifest_key(dir / "link" / ".." / "real" / "t.safetensors") == key);
  CHECK(manifest_key(dir / "real" / "u.safetensors") != key);
  // Written through the link, found through the real folder and the other way round; and a manifest
  // written in the symlinked folder checks the reads made through the real one.
  lrhost::io::WrittenChecksums scope;
  lrhost::io::write_safetensors(dir / "link" / "t.safetensors", {{"x", torch::arange(10, torch::kFloat32)}});
  CHECK(lrhost::io::WrittenChecksums::find(dir / "real" / "t.safetensors", lrhost::io::kChecksumChunkBytes));
  lrhost::io::write_checksum_manifest(dir / "link" / "sums.json", {"t.safetensors"});
  lrhost::io::VerifiedReads verified(dir / "link" / "sums.json");
  lrhost::io::read_safetensors(dir / "real" / "t.safetensors");
  CHECK(verified.files_verified() == 1);
}

TEST_CASE(
    "verified reads: listed files are checked as they are read, counted by their sizes; mismatches and bad manifests") {
  TempDir dir("verified_reads");
  lrhost::io::write_safetensors(dir / "model.safetensors", {{"w", torch::arange(3000, torch::kFloat32)}});
  write_bytes(dir / "state/step.json", "{\"step\": 4}");
  write_bytes(dir / "extra.json", "{}");  // not listed: read, never checked
  lrhost::io::write_checksum_manifest(dir / "checksums.json", {"model.safetensors", "state/step.json"}, {}, 4096);
  const uint64_t listed_bytes = fs::file_size(dir / "model.safetensors") + fs::file_size(dir / "state/step.json");
  {
    lrhost::io::VerifiedReads verified(dir / "checksums.json");
    CHECK(verified.has_manifest());
    CHECK_FALSE(verified.first_missing_or_resized());
    lrhost::io::read_safetensors(dir / "model.safetensors");
    lrhost::io::read_json_file(dir / "state" / ".." / "state/step.json", "");  // another spelling, same file
    lrhost::io::read_json_file(dir / "extra.json", "");
    CHECK((verified.files_verified() == 2));
    CHECK((verified.bytes_verified() == listed_bytes));
  }
  // A flipped bit: the reader fails naming the file and its 4096-byte chunk, before parsing.
  flip_bit(dir / "model.safetensors", 5000, 1);
  {
    lrhost::io::VerifiedReads verified(dir / "checksums.json");
    CHECK(contains(
        described_error<lrhost::io::ChecksumError>([&] { lrhost::io::read_safetensors(dir / "model.safetensors"); }),
        "model.safetensors: bytes 4096-8191 data does not match (chunk 1 of"));
  }
  // Outside a scope nothing is checked.
  CHECK_NOTHROW(lrhost::io::read_safetensors(dir / "model.safetensors"));
  flip_bit(dir / "model.safetensors", 5000, 1);
  // A truncated file is seen without reading it; a missing or malformed manifest.
  write_bytes(dir / "state/step.json", "{}");
  CHECK(contains(*lrhost::io::VerifiedReads(dir / "checksums.json").first_missing_or_resized(),
                 "state/step.json: bytes 2-10 is 2 bytes, the manifest says 11"));
  CHECK_FALSE(lrhost::io::VerifiedReads(dir / "none.json").has_manifest());
  write_bytes(dir / "checksums.json", "{\"algorithm\": \"crc32c\"}");
  CHECK(contains(
      described_error<lrhost::io::ChecksumError>([&] { lrhost::io::VerifiedReads bad(dir / "checksums.json"); }),
      "checksums.json: malformed checksum manifest"));
}
