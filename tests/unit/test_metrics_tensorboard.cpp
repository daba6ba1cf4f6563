// Unit tests of host/metrics TensorBoard output: CRC32C and its TFRecord mask, the protobuf wire
// encoders, and TensorBoardWriter's files (framing and CRCs read back by a small reader here, the
// Event fields decoded by a small protobuf decoder here, lazy creation, errors). That TensorBoard
// itself reads the files is checked by tests/interop/tensorboard_check.py.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <bit>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "host/metrics/crc32c.hpp"
#include "host/metrics/protobuf_wire.hpp"
#include "host/metrics/tensorboard_writer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;
using namespace lrhost::metrics;
namespace fs = std::filesystem;

namespace {

std::string bytes(std::initializer_list<unsigned> values) {
  std::string out;
  for (unsigned value : values) out.push_back(static_cast<char>(value));
  return out;
}

uint64_t read_le(std::string_view data, size_t offset, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(data[offset + i]);
  return value;
}

// TFRecord reader: the records' data, or nullopt (with `why`) when a length, CRC or size is wrong.
std::optional<std::vector<std::string>> read_records(std::string_view file, std::string& why) {
  auto fail = [&](const char* reason) {
    why = reason;
    return std::nullopt;
  };
  std::vector<std::string> records;
  size_t offset = 0;
  while (offset < file.size()) {
    if (file.size() - offset < 16) return fail("truncated header");  // 16: a record with no data
    const std::string_view length_bytes = file.substr(offset, 8);
    const uint64_t length = read_le(file, offset, 8);
    if (read_le(file, offset + 8, 4) != masked_crc32c(length_bytes)) return fail("length crc");
    if (length > file.size() - offset - 16) return fail("truncated data");
    const std::string_view data = file.substr(offset + 12, length);
    if (read_le(file, offset + 12 + length, 4) != masked_crc32c(data)) return fail("data crc");
    records.emplace_back(data);
    offset += 12 + length + 4;
  }
  return std::optional(std::move(records));
}

// One decoded protobuf field: a varint/fixed value in `number`, a length-delimited one in `data`.
struct Field {
  int wire_type = -1;
  uint64_t number = 0;
  std::string data;
};
using Message = std::multimap<uint32_t, Field>;

uint64_t read_varint(std::string_view in, size_t& offset) {
  uint64_t value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    REQUIRE(offset < in.size());
    const auto byte = static_cast<uint8_t>(in[offset++]);
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
  FAIL("varint longer than 10 bytes");
  return 0;
}

Message decode(std::string_view in) {
  Message message;
  size_t offset = 0;
  while (offset < in.size()) {
    const uint64_t key = read_varint(in, offset);
    Field field;
    field.wire_type = static_cast<int>(key & 7);
    switch (field.wire_type) {
      case 0:
        field.number = read_varint(in, offset);
        break;
      case 1:
        REQUIRE(offset + 8 <= in.size());
        field.number = read_le(in, offset, 8);
        offset += 8;
        break;
      case 5:
        REQUIRE(offset + 4 <= in.size());
        field.number = read_le(in, offset, 4);
        offset += 4;
        break;
      case 2: {
        const uint64_t length = read_varint(in, offset);
        REQUIRE(offset + length <= in.size());
        field.data = std::string(in.substr(offset, length));
        offset += length;
        break;
      }
      default:
        FAIL("unexpected wire type " << field.wire_type);
    }
    message.emplace(static_cast<uint32_t>(key >> 3), field);
  }
  return message;
}

// The single field `number` of `message`, checked to have `wire_type`.
const Field& only(const Message& message, uint32_t number, int wire_type) {
  REQUIRE(message.count(number) == 1);
  const Field& field = message.find(number)->second;
  REQUIRE(field.wire_type == wire_type);
  return field;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  return files;
}

std::vector<std::string> records_of(const fs::path& file) {
  std::string why;
  auto records = read_records(read_file(file), why);
  INFO("record check failed: " << why);
  REQUIRE(records.has_value());
  return *records;
}

}  // namespace

TEST_CASE("crc32c: Castagnoli check values and the TFRecord mask") {
  CHECK(crc32c("") == 0u);
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xFF')) == 0x62A8AB43u);  // RFC 3720 B.4
  // Expected values from tensorboard's own masked_crc32c (compat/tensorflow_stub/pywrap_tensorflow.py).
  CHECK(mask_crc32c(0) == 0xa282ead8u);
  CHECK(masked_crc32c("123456789") == 0xc78ab0e5u);
  CHECK(masked_crc32c(bytes({16, 0, 0, 0, 0, 0, 0, 0})) == 0x18fefb95u);
}

TEST_CASE("protobuf wire: varints, tags and fixed-width fields") {
  auto varint = [](uint64_t value) {
    std::string out;
    wire::put_varint(out, value);
    return out;
  };
  CHECK(varint(0) == bytes({0x00}));
  CHECK(varint(1) == bytes({0x01}));
  CHECK(varint(127) == bytes({0x7F}));
  CHECK(varint(128) == bytes({0x80, 0x01}));
  CHECK(varint(300) == bytes({0xAC, 0x02}));
  CHECK(varint(UINT64_MAX) == bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));

  std::string out;
  wire::put_tag(out, 1, wire::WireType::varint);
  wire::put_tag(out, 2, wire::WireType::length_delimited);
  wire::put_tag(out, 16, wire::WireType::fixed32);  // field numbers >= 16 need a two-byte key
  CHECK(out == bytes({0x08, 0x12, 0x85, 0x01}));

  out.clear();
  wire::put_varint_field(out, 2, -1);  // int64: two's complement, ten bytes
  CHECK(out == bytes({0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  out.clear();
  wire::put_bytes_field(out, 3, "hi");
  CHECK(out == bytes({0x1A, 0x02, 'h', 'i'}));
  out.clear();
  wire::put_double_field(out, 1, 1.0);
  CHECK(out == bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F}));
  out.clear();
  wire::put_float_field(out, 2, -2.0f);
  CHECK(out == bytes({0x15, 0, 0, 0, 0xC0}));
  out.clear();
  wire::put_fixed32(out, 0x01020304u);
  wire::put_fixed64(out, 0x0102030405060708ull);
  CHECK(out == bytes({4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1}));
}

TEST_CASE("TensorBoardWriter: no file until the first write") {
  test::TempDir tmp("tb_lazy");
  const fs::path dir = tmp / "run" / "tensorboard";
  TensorBoardWriter writer(dir);
  CHECK(fs::is_directory(dir));  // the folder is created at once
  CHECK(files_in(dir).empty());
  CHECK(writer.file().empty());
  writer.flush();  // flushing nothing creates nothing
  CHECK(files_in(dir).empty());

  writer.add_scalar("train/loss", 1, 0.5, 1000.0);
  const auto files = files_in(dir);
  REQUIRE(files.size() == 1);
  CHECK(files[0] == writer.file());
  const std::string name = files[0].filename().string();
  CHECK(name.starts_with("events.out.tfevents."));
  CHECK(name.ends_with("." + std::to_string(::getpid()) + "." + name.substr(name.rfind('.') + 1)));
  // Everything is flushed after each event: the file is complete while the writer is alive.
  CHECK(records_of(files[0]).size() == 2);

  TensorBoardWriter other(dir);
  other.add_scalar("train/loss", 2, 0.25, 1001.0);
  CHECK(files_in(dir).size() == 2);  // a second writer never appends to the first's file
  CHECK(other.file() != writer.file());
}

TEST_CASE("TensorBoardWriter: records are framed TFRecords holding the expected Events") {
  test::TempDir tmp("tb_records");
  fs::path file;
  {
    TensorBoardWriter writer(tmp.path);
    writer.start_session(7, 1699999999.5);
    writer.add_scalar("train/loss", 7, -1.25, 1700000000.25);
    writer.add_scalar("train/lr", -3, 1e-30, 1700000001.0);
    writer.add_text("config", 8, "größe\nline two", 1700000002.0);
    file = writer.file();
  }
  const auto records = records_of(file);
  REQUIRE(records.size() == 5);

  auto wall_time = [](const Message& event) { return std::bit_cast<double>(only(event, 1, 1).number); };
  auto step = [](const Message& event) { return static_cast<int64_t>(only(event, 2, 0).number); };

  // file_version first, with the wall time of the event that opened the file.
  const Message version = decode(records[0]);
  CHECK(only(version, 3, 2).data == "brain.Event:2");
  CHECK(wall_time(version) == 1699999999.5);
  CHECK(step(version) == 0);

  const Message session = decode(records[1]);
  CHECK(step(session) == 7);
  CHECK(wall_time(session) == 1699999999.5);
  CHECK(only(decode(only(session, 7, 2).data), 1, 0).number == 1);  // SessionLog{status: START}

  auto scalar = [&](const std::string& record, const std::string& tag) {
    const Message event = decode(record);
    const Message summary = decode(only(event, 5, 2).data);
    const Message value = decode(only(summary, 1, 2).data);
    CHECK(only(value, 1, 2).data == tag);
    return std::bit_cast<float>(static_cast<uint32_t>(only(value, 2, 5).number));
  };
  CHECK(scalar(records[2], "train/loss") == -1.25f);
  CHECK(step(decode(records[2])) == 7);
  CHECK(wall_time(decode(records[2])) == 1700000000.25);
  CHECK(scalar(records[3], "train/lr") == 1e-30f);
  CHECK(step(decode(records[3])) == -3);

  const Message text_event = decode(records[4]);
  CHECK(step(text_event) == 8);
  const Message text_value = decode(only(decode(only(text_event, 5, 2).data), 1, 2).data);
  CHECK(only(text_value, 1, 2).data == "config");
  const Message plugin = decode(only(decode(only(text_value, 9, 2).data), 1, 2).data);
  CHECK(only(plugin, 1, 2).data == "text");
  const Message tensor = decode(only(text_value, 8, 2).data);
  CHECK(only(tensor, 1, 0).number == 7);   // DT_STRING
  CHECK(only(tensor, 2, 2).data.empty());  // TensorShapeProto{}: a scalar
  CHECK(only(tensor, 8, 2).data == "größe\nline two");
}

TEST_CASE("TensorBoardWriter: a flipped byte fails the CRC check") {
  test::TempDir tmp("tb_flip");
  TensorBoardWriter writer(tmp.path);
  writer.add_scalar("a", 1, 2.0, 3.0);
  const std::string good = read_file(writer.file());
  std::string why;
  REQUIRE(read_records(good, why).has_value());

  std::string flipped = good;
  flipped[2] ^= 0x01;  // the first record's length
  CHECK_FALSE(read_records(flipped, why).has_value());
  CHECK(why == "length crc");

  flipped = good;
  flipped[12 + 3] ^= 0x40;  // inside the first record's data
  CHECK_FALSE(read_records(flipped, why).has_value());
  CHECK(why == "data crc");

  flipped = good;
  flipped[good.size() - 1] ^= 0x80;  // the last record's data CRC itself
  CHECK_FALSE(read_records(flipped, why).has_value());
  CHECK(why == "data crc");
}

TEST_CASE("TensorBoardWriter: errors name the path") {
  test::TempDir tmp("tb_errors");
  { std::ofstream(tmp / "plain_file") << "not a folder"; }
  // Works as root too: no permission bits involved.
  CHECK_THROWS_WITH_AS(TensorBoardWriter(tmp / "plain_file" / "tensorboard"),
                       doctest::Contains((tmp / "plain_file" / "tensorboard").c_str()), util::IoError);
  CHECK_THROWS_WITH_AS(
      TensorBoardWriter(tmp / "plain_file"),
      ("cannot create TensorBoard folder '" + (tmp / "plain_file").string() + "': Not a directory").c_str(),
      util::IoError);

  // The folder disappears between construction and the first write: the event file cannot be created.
  const fs::path dir = tmp / "gone";
  TensorBoardWriter writer(dir);
  test::remove_tree(dir);
  std::ofstream(dir) << "now a file";
  CHECK_THROWS_WITH_AS(
      writer.add_scalar("x", 1, 1.0, 1.0),
      doctest::Contains(("cannot create TensorBoard event file '" + dir.string() + "/events.out.tfevents.").c_str()),
      util::IoError);

  TensorBoardWriter ok(tmp / "ok");
  CHECK_THROWS_WITH_AS(ok.add_scalar("", 1, 1.0, 1.0), doctest::Contains("empty tag"), util::ConfigError);
  CHECK_THROWS_AS(ok.add_text("", 1, "t", 1.0), util::ConfigError);
  CHECK(files_in(tmp / "ok").empty());  // a rejected call writes nothing
}

TEST_CASE("TensorBoardWriter: a failed write throws IoError naming the file") {
  test::TempDir tmp("tb_write_fail");
  TensorBoardWriter writer(tmp.path);
  writer.add_scalar("a", 1, 1.0, 1.0);  // opens the file
  // A file size limit makes the next write fail with EFBIG (SIGXFSZ ignored) for this process only;
  // restored before any check can stop the test.
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = fs::file_size(writer.file()) + 20;  // the next record is written in part
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string message;
  try {
    for (int step = 2; step < 10; ++step) writer.add_scalar("a", step, 1.0, 1.0);
  } catch (const util::IoError& error) {
    message = error.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  const fs::path broken = writer.file();
  CHECK(message == "cannot write TensorBoard event file '" + broken.string() + "': File too large");
  std::string why;
  CHECK_FALSE(read_records(read_file(broken), why).has_value());  // ends in a partial record
  CHECK(why == "truncated data");

  // The broken file is left alone: the next event starts a new, readable file.
  writer.add_scalar("a", 10, 1.0, 1.0);
  CHECK(writer.file() != broken);
  CHECK(records_of(writer.file()).size() == 2);
  CHECK(files_in(tmp.path).size() == 2);
}

TEST_CASE("TensorBoardWriter: scalars are rounded to float32, beyond its range to infinities") {
  test::TempDir tmp("tb_float32");
  fs::path file;
  const std::vector<double> values{
      0.1, 1e39, -1e39, 0x1.fffffefffffffp127, 0x1.ffffffp127, 1e-40, std::numeric_limits<double>::quiet_NaN()};
  {
    TensorBoardWriter writer(tmp.path);
    for (double value : values) writer.add_scalar("x", 1, value, 1.0);
    file = writer.file();
  }
  std::vector<float> stored;
  const auto records = records_of(file);
  for (size_t i = 1; i < records.size(); ++i) {
    const Message value = decode(only(decode(only(decode(records[i]), 5, 2).data), 1, 2).data);
    stored.push_back(std::bit_cast<float>(static_cast<uint32_t>(only(value, 2, 5).number)));
  }
  REQUIRE(stored.size() == values.size());
  CHECK(stored[0] == 0.1f);
  CHECK(stored[1] == std::numeric_limits<float>::infinity());
  CHECK(stored[2] == -std::numeric_limits<float>::infinity());
  CHECK(stored[3] == std::numeric_limits<float>::max());       // below the midpoint: rounds down
  CHECK(stored[4] == std::numeric_limits<float>::infinity());  // the midpoint: ties to even
  CHECK(stored[5] == static_cast<float>(1e-40));               // a subnormal survives
  CHECK(stored[5] > 0.0f);
  CHECK(std::isnan(stored[6]));
}
