// Unit tests of the safetensors reader/writer: round trips of every dtype (bf16 included) with
// metadata, memory-mapped reading, one error per rule a malformed file can break, and a fuzz run of
// a few thousand mutated files that must each either parse or raise a util::Error, never crash.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <fstream>
#include <random>

#include "host/io/safetensors.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::read_bytes;

using namespace lrhost::io;
using lrhost::test::TempDir;
namespace fs = std::filesystem;

namespace {
// A file built by hand: header JSON (padded by nothing) and `data` bytes.
std::string raw_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string parse_error(const std::string& bytes) {
  try {
    parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
  } catch (const lrhost::util::DataError& error) {
    return error.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("every dtype round-trips with metadata, and reading maps the file") {
  TempDir dir("safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (auto type : {torch::kDouble, torch::kFloat, torch::kHalf, torch::kBFloat16, torch::kLong, torch::kInt,
                    torch::kShort, torch::kChar, torch::kByte, torch::kBool}) {
    torch::Tensor values = torch::arange(-6, 6, torch::kDouble).reshape({3, 4}).to(type);
    tensors.emplace_back("t." + safetensors_dtype(type), values);
  }
  tensors.emplace_back("scalar", torch::tensor(3.5));
  tensors.emplace_back("empty", torch::zeros({0, 5}));
  tensors.emplace_back("strided", torch::arange(12, torch::kFloat).reshape({3, 4}).t());  // non-contiguous
  fs::path file = dir / "model.safetensors";
  write_safetensors(file, tensors, {{"format", "pt"}});
  CHECK_FALSE(fs::exists(dir / "model.safetensors.tmp"));
  CHECK(read_bytes(file).size() % 8 == 0);  // header padded so the data starts aligned

  SafetensorsContent content = read_safetensors(file);
  CHECK((content.metadata == std::map<std::string, std::string>{{"format", "pt"}}));
  REQUIRE(content.tensors.size() == tensors.size());
  for (const auto& [name, expected] : tensors) {
    CAPTURE(name);
    const torch::Tensor& got = content.at(name);
    CHECK((got.scalar_type() == expected.scalar_type()));
    CHECK((got.sizes() == expected.sizes()));
    CHECK(torch::equal(got, expected.contiguous()));
  }
  CHECK_THROWS_AS(content.at("missing"), lrhost::util::DataError);
  // The header names dtypes the way the safetensors library does.
  CHECK(read_bytes(file).find("\"dtype\":\"BF16\"") != std::string::npos);
}

TEST_CASE("a file written by the Python safetensors library reads with the same values") {
  fs::path file = lrhost::test::fixture_path("safetensors", "python_written.safetensors");
  REQUIRE_FALSE(file.empty());
  SafetensorsContent content = read_safetensors(file);
  CHECK((content.metadata == std::map<std::string, std::string>{{"format", "pt"}}));
  CHECK(content.tensors.size() == 9);
  torch::Tensor expected = torch::arange(-6, 6, torch::kDouble).reshape({3, 4});
  for (const auto& [name, tensor] : content.tensors) {
    CAPTURE(name);
    CHECK(name == "t." + safetensors_dtype(tensor.scalar_type()));
    CHECK(torch::equal(tensor, expected.to(tensor.scalar_type())));
  }
}

TEST_CASE("writer rejects bad names and unknown dtypes") {
  TempDir dir("safetensors_names");
  CHECK_THROWS_AS(write_safetensors(dir / "a.safetensors", {{"x", torch::ones(1)}, {"x", torch::ones(1)}}),
                  lrhost::util::DataError);
  CHECK_THROWS_AS(write_safetensors(dir / "a.safetensors", {{"", torch::ones(1)}}), lrhost::util::DataError);
  CHECK_THROWS_AS(write_safetensors(dir / "a.safetensors", {{"c", torch::ones(2, torch::kComplexFloat)}}),
                  lrhost::util::DataError);
  CHECK_THROWS_AS(write_safetensors(dir / "missing_folder" / "a.safetensors", {{"x", torch::ones(1)}}),
                  lrhost::util::IoError);
}

TEST_CASE("each malformed-file rule gives an error that says what is wrong") {
  const std::string f32 = R"("dtype":"F32","shape":[2])";
  std::string eight(8, '\1');
  CHECK(parse_error("abc").find("too short") != std::string::npos);
  CHECK(parse_error(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8)).find("does not fit") != std::string::npos);
  CHECK(parse_error(raw_file("{not json", "")).find("not valid JSON") != std::string::npos);
  CHECK(parse_error(raw_file("[1,2]", "")).find("JSON object") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", eight))
            .find("unknown dtype 'F31'") != std::string::npos);
  CHECK(
      parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight)).find("non-negative") !=
      std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{)" + f32 + R"(,"data_offsets":[0,16]}})", eight)).find("outside") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{)" + f32 + R"(,"data_offsets":[8,0]}})", eight)).find("outside") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight)).find("need 12") !=
        std::string::npos);
  // A byte size that wraps around 2^64 to 0 is refused, not allocated.
  CHECK(parse_error(raw_file(R"({"a":{"dtype":"F64","shape":[2147483648,2147483648],"data_offsets":[0,0]}})", ""))
            .find("need more than 2^64 bytes") != std::string::npos);
  CHECK(
      parse_error(raw_file(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]},"b":{)" + f32 + R"(,"data_offsets":[4,12]}})",
                           eight + "1234"))
          .find("overlapping") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{)" + f32 + R"(,"data_offsets":[4,12]}})", eight + "1234")).find("gap") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]}})", eight + "x"))
            .find("after the last tensor") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"__metadata__":{"k":1}})", "")).find("must be a string") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"a":{"dtype":"F32"}})", "")).find("needs string 'dtype'") != std::string::npos);
  // A valid hand-made file parses.
  CHECK(parse_error(raw_file(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]}})", eight)) == "no error");

  TempDir dir("safetensors_io");
  CHECK_THROWS_AS(read_safetensors(dir / "absent.safetensors"), lrhost::util::IoError);
  CHECK_THROWS_AS(read_safetensors(dir.path), lrhost::util::IoError);  // a folder
}

TEST_CASE("fuzz: thousands of mutated files parse or fail cleanly") {
  TempDir dir("safetensors_fuzz");
  fs::path file = dir / "seed.safetensors";
  write_safetensors(
      file,
      {{"w", torch::randn({4, 3})}, {"b", torch::arange(5, torch::kLong)}, {"h", torch::ones({2}, torch::kBFloat16)}},
      {{"format", "pt"}});
  const std::string seed = read_bytes(file);
  std::mt19937 rng(1234);
  int parsed = 0, rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = seed;
    switch (round % 4) {
      case 0:  // flip a few bytes anywhere (header length, JSON, data)
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
        break;
      case 1:  // truncate
        bytes.resize(rng() % bytes.size());
        break;
      case 2:  // mutate a digit or quote inside the JSON header
        bytes[8 + rng() % 120] = "0123456789\"{}[],:-"[rng() % 18];
        break;
      case 3:  // append garbage or duplicate a chunk
        bytes += bytes.substr(rng() % bytes.size(), rng() % 32);
        break;
    }
    try {
      auto content = parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "fuzz");
      for (const auto& [name, tensor] : content.tensors) (void)tensor.sum();  // touch every value
      ++parsed;
    } catch (const lrhost::util::Error&) {
      ++rejected;
    }
    if (round % 100 == 0) {  // the memory-mapped path too
      std::ofstream(dir / "m.safetensors", std::ios::binary) << bytes;
      try {
        read_safetensors(dir / "m.safetensors");
      } catch (const lrhost::util::Error&) {
      }
    }
  }
  CHECK(rejected > 2000);
  CHECK(parsed + rejected == 3000);
}
