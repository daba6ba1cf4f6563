// Unit tests of host/data/parquet: write/read round trips of every column kind and dtype, a file
// made by pyarrow (tests/fixtures/parquet/make_fixture.py) read with the expected values, and the
// error paths (missing, corrupt and truncated files, wrong column names, types and shapes, schema
// changes between row groups, a writer dropped without close).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "host/data/parquet/parquet_reader.hpp"
#include "host/data/parquet/parquet_writer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;
using lrhost::test::read_bytes;

using namespace lrhost::data;
using lrhost::util::DataError;
using lrhost::util::IoError;
namespace fs = std::filesystem;

namespace {

using lrhost::test::TempDir;

fs::path fixture(const std::string& name) {
  fs::path path = lrhost::test::fixture_path("parquet", name);
  if (path.empty()) FAIL("fixture tests/fixtures/parquet/" << name << " not found");
  return path;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Message of the exception `body` throws as E; fails the test when it throws nothing or another type.
template <class E, class F>
std::string message_of(F&& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw another exception type: " << e.what());
  }
  FAIL("did not throw");
  return {};
}

// Deterministic per-row-group data: row group g, rows r gives distinct values in every column.
struct GroupData {
  torch::Tensor f32, f64_vec, i64, i32_mat, u8_cube, flag, flag_vec, f32_one;
  std::vector<std::string> names, images;
  std::vector<std::vector<std::string>> tags;
};

GroupData make_group(int g, int64_t rows) {
  GroupData d;
  const auto base = static_cast<double>(g * 1000);
  d.f32 = torch::arange(rows, torch::kFloat) * 0.1f + static_cast<float>(base);
  d.f64_vec = (torch::arange(rows * 3, torch::kDouble) / 7.0 + base).reshape({rows, 3});
  d.i64 = torch::arange(rows, torch::kLong) + (int64_t{1} << 40) + g;
  d.i32_mat = (torch::arange(rows * 6, torch::kInt) - 50 + g).reshape({rows, 2, 3});
  d.u8_cube = ((torch::arange(rows * 12, torch::kInt) * 7 + g) % 256).to(torch::kByte).reshape({rows, 2, 2, 3});
  d.flag = (torch::arange(rows, torch::kLong) + g) % 2 == 0;
  d.flag_vec = (torch::arange(rows * 2, torch::kLong) + g) % 3 == 0;
  d.flag_vec = d.flag_vec.reshape({rows, 2});
  d.f32_one = (torch::arange(rows, torch::kFloat) - 3.5f).reshape({rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    d.names.push_back("group " + std::to_string(g) + " row " + std::to_string(r));
    std::vector<std::string> tags;
    for (int64_t k = 0; k < r % 3; ++k) tags.push_back("tag" + std::to_string(k));
    d.tags.push_back(tags);
    std::string png("\x89PNG\r\n\x1a\n", 8);
    png += std::string(static_cast<std::size_t>(r), '\0') + std::to_string(g);  // embedded NUL bytes survive
    d.images.push_back(png);
  }
  return d;
}

std::vector<ParquetColumn> columns_of(const GroupData& d) {
  return {ParquetColumn::tensor("f32", d.f32),           ParquetColumn::tensor("f64_vec", d.f64_vec),
          ParquetColumn::tensor("i64", d.i64),           ParquetColumn::tensor("i32_mat", d.i32_mat),
          ParquetColumn::tensor("u8_cube", d.u8_cube),   ParquetColumn::tensor("flag", d.flag),
          ParquetColumn::tensor("flag_vec", d.flag_vec), ParquetColumn::tensor("f32_one", d.f32_one),
          ParquetColumn::string("name", d.names),        ParquetColumn::string_list("tags", d.tags),
          ParquetColumn::image("image", d.images)};
}

const std::vector<int64_t> kGroupRows{3, 1, 5};

fs::path write_three_groups(const fs::path& path) {
  ParquetWriter writer(path, {{"huggingface", R"({"info": {"features": {}}})"}, {"lrhost", "test"}});
  for (int g = 0; g < 3; ++g) writer.write_row_group(columns_of(make_group(g, kGroupRows[g])));
  CHECK(writer.rows_written() == 9);
  CHECK(writer.num_row_groups_written() == 3);
  CHECK(writer.bytes_written() > 0);
  writer.close();
  return path;
}

}  // namespace

TEST_CASE("parquet: every column kind and dtype round-trips over three row groups") {
  TempDir dir("roundtrip");
  const auto path = write_three_groups(dir / "data.parquet");
  // For checking the file with pyarrow / pandas / HF datasets by hand: LRHOST_PARQUET_OUT=file.parquet.
  if (const char* keep = std::getenv("LRHOST_PARQUET_OUT"))
    fs::copy_file(path, keep, fs::copy_options::overwrite_existing);
  std::vector<GroupData> groups;
  for (int g = 0; g < 3; ++g) groups.push_back(make_group(g, kGroupRows[g]));
  const auto cat = [&](torch::Tensor GroupData::*member) {
    std::vector<torch::Tensor> parts;
    for (const auto& g : groups) parts.push_back(g.*member);
    return torch::cat(parts);
  };

  ParquetReader reader(path);
  CHECK(reader.path() == path);
  CHECK(reader.num_rows() == 9);
  REQUIRE(reader.num_row_groups() == 3);
  for (int g = 0; g < 3; ++g) CHECK(reader.row_group_num_rows(g) == kGroupRows[g]);
  CHECK_THROWS_AS(reader.row_group_num_rows(3), std::out_of_range);
  CHECK(reader.column_names() == std::vector<std::string>{"f32", "f64_vec", "i64", "i32_mat", "u8_cube", "flag",
                                                          "flag_vec", "f32_one", "name", "tags", "image"});
  CHECK(reader.has_column("i64"));
  CHECK_FALSE(reader.has_column("nope"));
  CHECK(reader.column_type("f32") == "float");
  CHECK(contains(reader.column_type("f64_vec"), "fixed_size_list"));
  CHECK(contains(reader.column_type("f64_vec"), "[3]"));
  CHECK(contains(reader.column_type("image"), "struct<bytes: binary, path: string>"));

  CHECK(torch::equal(reader.read_tensor("f32", torch::kFloat, {}), cat(&GroupData::f32)));
  CHECK(torch::equal(reader.read_tensor("f64_vec", torch::kDouble, {3}), cat(&GroupData::f64_vec)));
  CHECK(torch::equal(reader.read_tensor("i64", torch::kLong, {}), cat(&GroupData::i64)));
  CHECK(torch::equal(reader.read_tensor("i32_mat", torch::kInt, {2, 3}), cat(&GroupData::i32_mat)));
  CHECK(torch::equal(reader.read_tensor("u8_cube", torch::kByte, {2, 2, 3}), cat(&GroupData::u8_cube)));
  CHECK(torch::equal(reader.read_tensor("flag", torch::kBool, {}), cat(&GroupData::flag)));
  CHECK(torch::equal(reader.read_tensor("flag_vec", torch::kBool, {2}), cat(&GroupData::flag_vec)));
  CHECK(torch::equal(reader.read_tensor("f32_one", torch::kFloat, {1}), cat(&GroupData::f32_one)));
  // One-element rows match either way: shape {} reads a list<1> column, {1} a primitive one.
  CHECK(torch::equal(reader.read_tensor("f32_one", torch::kFloat, {}), cat(&GroupData::f32_one).reshape({9})));
  CHECK(torch::equal(reader.read_tensor("f32", torch::kFloat, {1}), cat(&GroupData::f32).reshape({9, 1})));

  CHECK(reader.stored_shape("i32_mat") == std::vector<int64_t>{2, 3});
  CHECK(reader.stored_shape("f32").empty());
  const auto widened = reader.read_tensor_cast("i32_mat", torch::kLong);
  CHECK((widened.scalar_type() == torch::kLong));  // (( )): doctest cannot print ScalarType
  CHECK(torch::equal(widened, cat(&GroupData::i32_mat).to(torch::kLong)));

  std::vector<std::string> names;
  std::vector<std::vector<std::string>> tags;
  std::vector<std::string> images;
  for (const auto& g : groups) {
    names.insert(names.end(), g.names.begin(), g.names.end());
    tags.insert(tags.end(), g.tags.begin(), g.tags.end());
    images.insert(images.end(), g.images.begin(), g.images.end());
  }
  CHECK(reader.read_strings("name") == names);
  CHECK(reader.read_string_lists("tags") == tags);
  const auto bytes = reader.read_image_bytes("image");
  REQUIRE(bytes.size() == 9);
  for (int64_t r = 0; r < 9; ++r) CHECK(bytes.at(r) == images[static_cast<std::size_t>(r)]);
  const ByteColumn copy = bytes;  // shared, not copied: the views point into the same Arrow buffer
  CHECK(copy.at(8).data() == bytes.at(8).data());
  CHECK_THROWS_AS(bytes.at(9), std::out_of_range);
  CHECK_THROWS_AS(bytes.at(-1), std::out_of_range);
  CHECK(ByteColumn().size() == 0);

  CHECK(reader.schema_metadata("huggingface") == std::optional<std::string>(R"({"info": {"features": {}}})"));
  CHECK(reader.schema_metadata("lrhost") == std::optional<std::string>("test"));
  CHECK_FALSE(reader.schema_metadata("pandas").has_value());
}

TEST_CASE("parquet: a file made by pyarrow reads with the expected values") {
  ParquetReader reader(fixture("pyarrow_fixture.parquet"));
  constexpr int64_t rows = 5;
  REQUIRE(reader.num_rows() == rows);
  REQUIRE(reader.num_row_groups() == 2);
  CHECK(reader.row_group_num_rows(0) == 3);
  CHECK(reader.row_group_num_rows(1) == 2);

  const auto f32 = reader.read_tensor("f32", torch::kFloat, {});
  const auto i64 = reader.read_tensor("i64", torch::kLong, {});
  const auto vec3 = reader.read_tensor("vec3", torch::kFloat, {3});
  const auto vec_f64 = reader.read_tensor("vec_f64", torch::kDouble, {2});
  const auto mat = reader.read_tensor("mat", torch::kFloat, {2, 2});
  const auto mat_ext = reader.read_tensor("mat_ext", torch::kFloat, {2, 2});
  const auto flag = reader.read_tensor("flag", torch::kBool, {});
  CHECK(vec3.sizes() == torch::IntArrayRef{rows, 3});
  CHECK(mat.sizes() == torch::IntArrayRef{rows, 2, 2});
  for (int64_t i = 0; i < rows; ++i) {
    const auto d = static_cast<double>(i);
    CHECK(f32[i].item<float>() == static_cast<float>(0.5 * d));
    CHECK(i64[i].item<int64_t>() == 10'000'000'000 + i);
    CHECK(vec3[i][0].item<float>() == static_cast<float>(d));
    CHECK(vec3[i][1].item<float>() == static_cast<float>(d + 0.25));
    CHECK(vec3[i][2].item<float>() == static_cast<float>(-d));
    CHECK(vec_f64[i][0].item<double>() == d / 3.0);
    CHECK(vec_f64[i][1].item<double>() == -d / 7.0);
    for (const auto& m : {mat, mat_ext}) {
      CHECK(m[i][0][0].item<float>() == static_cast<float>(d + 0.0));
      CHECK(m[i][0][1].item<float>() == static_cast<float>(d + 0.1));
      CHECK(m[i][1][0].item<float>() == static_cast<float>(d + 0.2));
      CHECK(m[i][1][1].item<float>() == static_cast<float>(d + 0.3));
    }
    CHECK(flag[i].item<bool>() == (i % 2 == 0));
  }
  CHECK(reader.stored_shape("vec_f64") == std::vector<int64_t>{2});
  CHECK(reader.stored_shape("mat_ext") == std::vector<int64_t>{2, 2});
  CHECK(torch::equal(reader.read_tensor_cast("vec_f64", torch::kFloat), vec_f64.to(torch::kFloat)));
  CHECK(torch::equal(reader.read_tensor_cast("i64", torch::kDouble), i64.to(torch::kDouble)));

  const auto names = reader.read_strings("name");
  const auto tags = reader.read_string_lists("tags");
  const auto images = reader.read_image_bytes("image");
  REQUIRE(images.size() == rows);
  for (int64_t i = 0; i < rows; ++i) {
    const auto row = static_cast<std::size_t>(i);
    CHECK(names[row] == "task " + std::to_string(i));
    CHECK(tags[row] == std::vector<std::string>(static_cast<std::size_t>(i % 3), "t" + std::to_string(i)));
    std::string png;
    for (int64_t k = 0; k <= i; ++k) png += std::string("\x89PNG", 4) + static_cast<char>(i);
    CHECK(images.at(i) == png);
  }
  const auto pandas = reader.schema_metadata("pandas");
  REQUIRE(pandas.has_value());
  CHECK(contains(*pandas, "\"index_columns\""));
  REQUIRE(reader.schema_metadata("huggingface").has_value());
  CHECK(contains(*reader.schema_metadata("huggingface"), "\"features\""));

  // Content errors: a null, a variable list of the wrong length, a string column read as numbers.
  auto message = message_of<DataError>([&] { reader.read_tensor("f32_null", torch::kFloat, {}); });
  CHECK(contains(message, "f32_null"));
  CHECK(contains(message, "null value in row 3"));
  message = message_of<DataError>([&] { reader.read_tensor("vec_f64", torch::kDouble, {3}); });
  CHECK(contains(message, "row 0 has 2 values, expected 3"));
  message = message_of<DataError>([&] { reader.read_tensor_cast("name", torch::kFloat); });
  CHECK(contains(message, "expected a numeric column, found string"));
  message = message_of<DataError>([&] { reader.read_strings("f32"); });
  CHECK(contains(message, "expected a string column, found float"));
  message = message_of<DataError>([&] { reader.read_string_lists("name"); });
  CHECK(contains(message, "expected a list<string> column"));
  message = message_of<DataError>([&] { reader.read_image_bytes("vec3"); });
  CHECK(contains(message, "expected an image column"));
}

TEST_CASE("parquet: missing, corrupt and truncated files are IoErrors naming the file") {
  TempDir dir("corrupt");
  const auto missing = dir / "missing.parquet";
  auto message = message_of<IoError>([&] { ParquetReader reader(missing); });
  CHECK(contains(message, missing.string()));

  const auto noise = dir / "noise.parquet";
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes += static_cast<char>((i * 7919 + 13) % 251);
  write_bytes(noise, bytes);
  message = message_of<IoError>([&] { ParquetReader reader(noise); });
  CHECK(contains(message, noise.string()));

  // Random bytes between valid magic numbers: the footer length points anywhere.
  const auto fake = dir / "fake.parquet";
  write_bytes(fake, "PAR1" + bytes + std::string("\x10\x00\x00\x00", 4) + "PAR1");
  message = message_of<IoError>([&] { ParquetReader reader(fake); });
  CHECK(contains(message, fake.string()));

  const auto good = write_three_groups(dir / "good.parquet");
  const auto full = read_bytes(good);
  for (const std::size_t keep : {full.size() / 2, full.size() - 1, std::size_t{4}}) {
    const auto truncated = dir / "truncated.parquet";
    write_bytes(truncated, full.substr(0, keep));
    message = message_of<IoError>([&] { ParquetReader reader(truncated); });
    CHECK(contains(message, truncated.string()));
  }
  // A damaged data page behind an intact footer: an error, never a crash.
  std::string damaged = full;
  for (std::size_t i = 64; i < damaged.size() / 2; i += 3) damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
  write_bytes(dir / "damaged.parquet", damaged);
  CHECK_THROWS_AS(ParquetReader(dir / "damaged.parquet"), IoError);

  message = message_of<IoError>([&] { ParquetReader reader(dir.path); });
  CHECK(contains(message, "is a directory"));
}

TEST_CASE("parquet: wrong column names, dtypes and shapes are DataErrors naming expected and found") {
  TempDir dir("wrong");
  ParquetReader reader(write_three_groups(dir / "data.parquet"));
  auto message = message_of<DataError>([&] { reader.read_tensor("f64_vec2", torch::kDouble, {3}); });
  CHECK(contains(message, "no column 'f64_vec2'"));
  CHECK(contains(message, "'f32', 'f64_vec', 'i64'"));
  CHECK(contains(message, (dir / "data.parquet").string()));
  CHECK_THROWS_AS(reader.column_type("nope"), DataError);

  message = message_of<DataError>([&] { reader.read_tensor("f32", torch::kDouble, {}); });
  CHECK(contains(message, "column 'f32'"));
  CHECK(contains(message, "expected float64 [] per row, found float"));
  message = message_of<DataError>([&] { reader.read_tensor("f64_vec", torch::kDouble, {4}); });
  CHECK(contains(message, "expected float64 [4] per row, found fixed_size_list"));
  CHECK(contains(message, "[3]"));
  message = message_of<DataError>([&] { reader.read_tensor("i32_mat", torch::kInt, {3, 2}); });
  CHECK(contains(message, "expected int32 [3, 2]"));
  message = message_of<DataError>([&] { reader.read_tensor("i32_mat", torch::kInt, {6}); });
  CHECK(contains(message, "expected int32 [6]"));
  message = message_of<DataError>([&] { reader.read_tensor("f64_vec", torch::kDouble, {}); });
  CHECK(contains(message, "expected float64 []"));
  message = message_of<DataError>([&] { reader.read_tensor("flag", torch::kByte, {}); });
  CHECK(contains(message, "expected uint8 [] per row, found bool"));
  message = message_of<DataError>([&] { reader.read_tensor("name", torch::kFloat, {}); });
  CHECK(contains(message, "found string"));
}

TEST_CASE("parquet writer: a schema change between row groups is a DataError, and the writer stays usable") {
  TempDir dir("schema");
  const auto path = dir / "data.parquet";
  ParquetWriter writer(path);
  writer.write_row_group({ParquetColumn::tensor("x", torch::zeros({2, 3})), ParquetColumn::string("s", {"a", "b"})});

  auto message = message_of<DataError>([&] {
    writer.write_row_group({ParquetColumn::tensor("x", torch::zeros({2, 4})), ParquetColumn::string("s", {"a", "b"})});
  });
  CHECK(contains(message, "column 'x'"));
  CHECK(contains(message, "[4]"));
  CHECK(contains(message, "[3]"));
  message = message_of<DataError>([&] {
    writer.write_row_group(
        {ParquetColumn::tensor("x", torch::zeros({2, 3}, torch::kDouble)), ParquetColumn::string("s", {"a", "b"})});
  });
  CHECK(contains(message, "double"));
  message = message_of<DataError>([&] { writer.write_row_group({ParquetColumn::tensor("x", torch::zeros({2, 3}))}); });
  CHECK(contains(message, "'x', 's'"));
  message = message_of<DataError>([&] {
    writer.write_row_group({ParquetColumn::string("s", {"a"}), ParquetColumn::tensor("x", torch::zeros({1, 3}))});
  });
  CHECK(contains(message, "differ"));
  message = message_of<DataError>([&] {
    writer.write_row_group({ParquetColumn::tensor("x", torch::zeros({3, 3})), ParquetColumn::string("s", {"a", "b"})});
  });
  CHECK(contains(message, "has 2 rows, but column 'x' has 3"));
  CHECK_THROWS_AS(writer.write_row_group({}), DataError);
  CHECK_THROWS_AS(writer.write_row_group({ParquetColumn::tensor("x", torch::zeros({1, 3})),
                                          ParquetColumn::tensor("x", torch::zeros({1, 3}))}),
                  DataError);
  CHECK_THROWS_AS(writer.write_row_group({ParquetColumn::tensor("b", torch::zeros({1}, torch::kBFloat16))}), DataError);
  CHECK_THROWS_AS(writer.write_row_group({ParquetColumn::tensor("z", torch::zeros({}))}), DataError);

  writer.write_row_group({ParquetColumn::tensor("x", torch::ones({1, 3})), ParquetColumn::string("s", {"c"})});
  writer.close();
  writer.close();  // a second close is a no-op
  CHECK_THROWS_AS(writer.write_row_group({ParquetColumn::tensor("x", torch::ones({1, 3}))}), std::logic_error);

  ParquetReader reader(path);
  CHECK(reader.num_row_groups() == 2);
  CHECK(torch::equal(reader.read_tensor("x", torch::kFloat, {3}),
                     torch::cat({torch::zeros({2, 3}), torch::ones({1, 3})})));
  CHECK(reader.read_strings("s") == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("parquet writer: no file remains unless close() succeeds") {
  TempDir dir("abort");
  const auto path = dir / "partial.parquet";
  {
    ParquetWriter writer(path);
    writer.write_row_group({ParquetColumn::tensor("x", torch::arange(10))});
    CHECK(fs::exists(path));
  }
  CHECK_FALSE(fs::exists(path));
  { ParquetWriter writer(path); }
  CHECK_FALSE(fs::exists(path));
  {
    ParquetWriter writer(path);
    CHECK_THROWS_AS(writer.close(), DataError);  // no row group: no schema to write
    CHECK_FALSE(fs::exists(path));
  }
  // Non-contiguous and empty row groups are fine; an empty group still counts as a row group.
  {
    ParquetWriter writer(path);
    writer.write_row_group({ParquetColumn::tensor("x", torch::arange(12, torch::kDouble).reshape({3, 4}).t())});
    writer.write_row_group({ParquetColumn::tensor("x", torch::zeros({0, 3}, torch::kDouble))});
    writer.close();
  }
  ParquetReader reader(path);
  CHECK(reader.num_row_groups() == 2);
  CHECK(reader.row_group_num_rows(1) == 0);
  CHECK(torch::equal(reader.read_tensor("x", torch::kDouble, {3}),
                     torch::arange(12, torch::kDouble).reshape({3, 4}).t()));

  const auto unwritable = dir / "no_such_folder" / "x.parquet";
  const auto message = message_of<IoError>([&] { ParquetWriter writer(unwritable); });
  CHECK(contains(message, unwritable.string()));
}
