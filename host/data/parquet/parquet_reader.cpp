// ParquetReader: loads a whole parquet file into an Arrow table once, then converts columns on
// request. Every Arrow failure (status or ParquetException) becomes an lrhost exception naming the
// file, and the table is fully validated after reading, because a corrupt file must end in a clear
// error, never in a crash inside our buffer walks.
#include "host/data/parquet/parquet_reader.hpp"

#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <stdexcept>

#include "host/data/parquet/arrow_tensor.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::data {

namespace fs = std::filesystem;
using namespace arrow_tensor;

// ---------------------------------------------------------------------------------------------
// ByteColumn

struct ByteColumn::Impl {
  // Each chunk is a BinaryArray or a LargeBinaryArray (checked when built); ends are cumulative rows.
  std::vector<std::shared_ptr<arrow::Array>> chunks;
  std::vector<int64_t> ends;
  int64_t rows = 0;
};

ByteColumn::ByteColumn() : impl_(std::make_shared<Impl>()) {}
ByteColumn::ByteColumn(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

int64_t ByteColumn::size() const {
  return impl_->rows;
}

std::string_view ByteColumn::at(int64_t row) const {
  if (row < 0 || row >= impl_->rows)
    throw std::out_of_range("ByteColumn row " + std::to_string(row) + " outside [0, " + std::to_string(impl_->rows) +
                            ")");
  const auto it = std::upper_bound(impl_->ends.begin(), impl_->ends.end(), row);
  const auto chunk = static_cast<std::size_t>(it - impl_->ends.begin());
  const int64_t local = row - (chunk ? impl_->ends[chunk - 1] : 0);
  const auto& array = *impl_->chunks[chunk];
  if (array.type_id() == arrow::Type::LARGE_BINARY) {
    const auto view = static_cast<const arrow::LargeBinaryArray&>(array).GetView(local);
    return {view.data(), view.size()};
  }
  const auto view = static_cast<const arrow::BinaryArray&>(array).GetView(local);
  return {view.data(), view.size()};
}

// ---------------------------------------------------------------------------------------------
// ParquetReader

struct ParquetReader::Impl {
  fs::path path;
  std::shared_ptr<arrow::Table> table;
  std::shared_ptr<parquet::FileMetaData> metadata;

  std::string file_text() const { return "parquet file '" + path.string() + "'"; }
  std::string where(const std::string& column) const { return file_text() + ", column '" + column + "'"; }

  std::shared_ptr<arrow::ChunkedArray> column(const std::string& name) const {
    if (auto found = table->GetColumnByName(name)) return found;
    const auto names = table->ColumnNames();
    const auto close = util::nearest(name, names);
    throw util::DataError(file_text() + " has no column '" + name + "'; its columns: " + util::quoted_list(names),
                          close.empty() ? std::string{} : "did you mean " + util::quoted_list(close) + "?");
  }
};

ParquetReader::ParquetReader(const fs::path& file) : impl_(std::make_unique<Impl>()) {
  impl_->path = file;
  const std::string name = impl_->file_text();
  std::error_code error;
  if (!fs::exists(file, error)) throw util::IoError(name + " does not exist");
  if (fs::is_directory(file, error)) throw util::IoError(name + " is a directory, not a file");
  try {
    auto input = value_or_io(arrow::io::ReadableFile::Open(file.string()), "cannot open " + name);
    parquet::ArrowReaderProperties properties;
    properties.set_use_threads(false);
    parquet::arrow::FileReaderBuilder builder;
    ok_or_io(builder.Open(input), "cannot read " + name + " (not a parquet file, or truncated)");
    builder.properties(properties);
    auto reader = value_or_io(builder.Build(), "cannot read " + name);
    impl_->metadata = reader->parquet_reader()->metadata();
    impl_->table = value_or_io(reader->ReadTable(), "cannot read the data of " + name);
    // Full validation (offsets within buffers, child lengths) is what lets the column walks below
    // trust the buffers of a file whose footer might lie.
    ok_or_io(impl_->table->ValidateFull(), name + " is corrupt");
  } catch (const util::Error&) {
    throw;
  } catch (const std::exception& e) {  // parquet::ParquetException, std::bad_alloc from absurd sizes
    throw util::IoError("cannot read " + name + ": " + e.what());
  }
}

ParquetReader::~ParquetReader() = default;
ParquetReader::ParquetReader(ParquetReader&&) noexcept = default;
ParquetReader& ParquetReader::operator=(ParquetReader&&) noexcept = default;

const fs::path& ParquetReader::path() const {
  return impl_->path;
}
int64_t ParquetReader::num_rows() const {
  return impl_->table->num_rows();
}
int ParquetReader::num_row_groups() const {
  return impl_->metadata->num_row_groups();
}

int64_t ParquetReader::row_group_num_rows(int group) const {
  if (group < 0 || group >= num_row_groups())
    throw std::out_of_range(impl_->file_text() + ": row group " + std::to_string(group) + " outside [0, " +
                            std::to_string(num_row_groups()) + ")");
  return impl_->metadata->RowGroup(group)->num_rows();
}

std::vector<std::string> ParquetReader::column_names() const {
  return impl_->table->ColumnNames();
}

bool ParquetReader::has_column(const std::string& name) const {
  return impl_->table->GetColumnByName(name) != nullptr;
}

std::string ParquetReader::column_type(const std::string& name) const {
  return impl_->column(name)->type()->ToString();
}

std::vector<int64_t> ParquetReader::stored_shape(const std::string& column) const {
  return stored_row_shape(*impl_->column(column));
}

torch::Tensor ParquetReader::read_tensor(const std::string& column, torch::ScalarType dtype,
                                         const std::vector<int64_t>& shape) const {
  const auto data = impl_->column(column);
  int64_t numel = 1;
  for (const int64_t d : shape) {
    if (d < 0) throw util::DataError(impl_->where(column) + ": requested per-row shape has a negative dimension");
    numel *= d;
  }
  // A one-element row may be stored with any nesting ([] as list<1>, [1] as a primitive column).
  std::vector<int64_t> row_shape = shape;
  const int depth = list_depth(*data->type());
  if (numel == 1 && depth != static_cast<int>(shape.size())) row_shape.assign(static_cast<std::size_t>(depth), 1);

  std::vector<int64_t> sizes{num_rows()};
  sizes.insert(sizes.end(), row_shape.begin(), row_shape.end());
  auto out = torch::empty(sizes, torch::TensorOptions().dtype(dtype));
  copy_column(*data, row_shape, shape, out, impl_->where(column));
  if (row_shape != shape) {
    sizes.resize(1);
    sizes.insert(sizes.end(), shape.begin(), shape.end());
    out = out.reshape(sizes);
  }
  return out;
}

torch::Tensor ParquetReader::read_tensor_cast(const std::string& column, torch::ScalarType dtype) const {
  const auto data = impl_->column(column);
  const auto leaf = leaf_type(data->type());
  const auto stored = torch_type_for(*leaf);
  if (!stored)
    throw util::DataError(impl_->where(column) + ": expected a numeric column, found " + data->type()->ToString());
  return read_tensor(column, *stored, stored_row_shape(*data)).to(dtype);
}

namespace {

bool is_text(arrow::Type::type id) {
  return id == arrow::Type::STRING || id == arrow::Type::LARGE_STRING;
}

// Appends rows [start, start + count) of a string / large_string array; nulls are an error.
void append_strings(const arrow::Array& array, int64_t start, int64_t count, std::vector<std::string>& out,
                    const std::string& where) {
  for (int64_t i = start; i < start + count; ++i) {
    if (array.IsNull(i)) throw util::DataError(where + ": null string");
    if (array.type_id() == arrow::Type::LARGE_STRING)
      out.emplace_back(static_cast<const arrow::LargeStringArray&>(array).GetView(i));
    else
      out.emplace_back(static_cast<const arrow::StringArray&>(array).GetView(i));
  }
}

template <class ListArray>
void append_string_lists(const ListArray& lists, std::vector<std::vector<std::string>>& out, int64_t first_row,
                         const std::string& where) {
  const auto values = storage_array(lists.values());
  for (int64_t i = 0; i < lists.length(); ++i) {
    if (lists.IsNull(i)) throw util::DataError(where + ": null list in row " + std::to_string(first_row + i));
    auto& row = out.emplace_back();
    append_strings(*values, lists.value_offset(i), lists.value_length(i), row, where);
  }
}

}  // namespace

std::vector<std::string> ParquetReader::read_strings(const std::string& column) const {
  const auto data = impl_->column(column);
  const auto where = impl_->where(column);
  if (!is_text(storage_type(data->type())->id()))
    throw util::DataError(where + ": expected a string column, found " + data->type()->ToString());
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(data->length()));
  for (const auto& chunk : data->chunks()) append_strings(*storage_array(chunk), 0, chunk->length(), out, where);
  return out;
}

std::vector<std::vector<std::string>> ParquetReader::read_string_lists(const std::string& column) const {
  const auto data = impl_->column(column);
  const auto where = impl_->where(column);
  const auto type = storage_type(data->type());
  const bool list = type->id() == arrow::Type::LIST || type->id() == arrow::Type::LARGE_LIST;
  if (!list || !is_text(storage_type(static_cast<const arrow::BaseListType&>(*type).value_type())->id()))
    throw util::DataError(where + ": expected a list<string> column, found " + data->type()->ToString());
  std::vector<std::vector<std::string>> out;
  out.reserve(static_cast<std::size_t>(data->length()));
  int64_t row = 0;
  for (const auto& chunk : data->chunks()) {
    const auto array = storage_array(chunk);
    if (array->type_id() == arrow::Type::LIST)
      append_string_lists(static_cast<const arrow::ListArray&>(*array), out, row, where);
    else
      append_string_lists(static_cast<const arrow::LargeListArray&>(*array), out, row, where);
    row += chunk->length();
  }
  return out;
}

ByteColumn ParquetReader::read_image_bytes(const std::string& column) const {
  const auto data = impl_->column(column);
  const auto where = impl_->where(column);
  const auto type = storage_type(data->type());
  const auto is_binary = [](const arrow::DataType& t) {
    return t.id() == arrow::Type::BINARY || t.id() == arrow::Type::LARGE_BINARY;
  };
  int bytes_field = -1;
  if (type->id() == arrow::Type::STRUCT) {
    bytes_field = static_cast<const arrow::StructType&>(*type).GetFieldIndex("bytes");
    if (bytes_field < 0 || !is_binary(*storage_type(type->field(bytes_field)->type()))) bytes_field = -2;
  }
  if (bytes_field == -2 || (bytes_field == -1 && !is_binary(*type)))
    throw util::DataError(where + ": expected an image column (struct<bytes: binary, path: string>) or binary, found " +
                          data->type()->ToString());

  auto impl = std::make_shared<ByteColumn::Impl>();
  for (const auto& chunk : data->chunks()) {
    auto array = storage_array(chunk);
    if (bytes_field >= 0) {
      const auto& image = static_cast<const arrow::StructArray&>(*array);
      if (image.null_count() > 0)
        for (int64_t i = 0; i < image.length(); ++i)
          if (image.IsNull(i))
            throw util::DataError(where + ": row " + std::to_string(impl->rows + i) + " has no image (null)");
      array = storage_array(image.field(bytes_field));  // field() applies the struct's slice offset
    }
    if (array->null_count() > 0)
      for (int64_t i = 0; i < array->length(); ++i)
        if (array->IsNull(i))
          throw util::DataError(where + ": row " + std::to_string(impl->rows + i) +
                                    " has no image bytes (null; an image stored by path only is not supported)",
                                "re-save the dataset with images embedded in the parquet files");
    impl->rows += array->length();
    impl->ends.push_back(impl->rows);
    impl->chunks.push_back(std::move(array));
  }
  return ByteColumn(std::move(impl));
}

std::optional<std::string> ParquetReader::schema_metadata(const std::string& key) const {
  // The file's key-value metadata is where pyarrow puts the schema metadata ("pandas", "huggingface").
  for (const auto& metadata : {impl_->metadata->key_value_metadata(), impl_->table->schema()->metadata()}) {
    if (!metadata) continue;
    const int index = metadata->FindKey(key);
    if (index >= 0) return metadata->value(index);
  }
  return std::nullopt;
}

}  // namespace lrhost::data
