// ParquetWriter: converts lrhost columns (tensors, strings, string lists, PNG bytes) to Arrow arrays
// and writes each call as exactly one row group, with pyarrow's defaults for LeRobot data files
// (snappy, dictionary encoding, the Arrow schema stored in the file so that fixed_size_list types
// survive the round trip). All checks run before anything is written, so a DataError leaves the
// file consistent; only an I/O failure abandons it.
#include "host/data/parquet/parquet_writer.hpp"

#include <arrow/io/file.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/properties.h>

#include <set>
#include <stdexcept>

#include "host/data/parquet/arrow_tensor.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::data {

namespace fs = std::filesystem;
using namespace arrow_tensor;

// ---------------------------------------------------------------------------------------------
// ParquetColumn

ParquetColumn ParquetColumn::tensor(std::string name, torch::Tensor values) {
  ParquetColumn column;
  column.name = std::move(name);
  column.kind = Kind::Tensor;
  column.values = std::move(values);
  return column;
}

ParquetColumn ParquetColumn::string(std::string name, std::vector<std::string> values) {
  ParquetColumn column;
  column.name = std::move(name);
  column.kind = Kind::String;
  column.strings = std::move(values);
  return column;
}

ParquetColumn ParquetColumn::string_list(std::string name, std::vector<std::vector<std::string>> values) {
  ParquetColumn column;
  column.name = std::move(name);
  column.kind = Kind::StringList;
  column.string_lists = std::move(values);
  return column;
}

ParquetColumn ParquetColumn::image(std::string name, std::vector<std::string> png_bytes) {
  ParquetColumn column;
  column.name = std::move(name);
  column.kind = Kind::Image;
  column.strings = std::move(png_bytes);
  return column;
}

int64_t ParquetColumn::rows() const {
  switch (kind) {
    case Kind::Tensor:
      return values.defined() && values.dim() > 0 ? values.size(0) : 0;
    case Kind::StringList:
      return static_cast<int64_t>(string_lists.size());
    default:
      return static_cast<int64_t>(strings.size());
  }
}

namespace {

// Arrow array of one column; the field types match what pyarrow infers for the same data.
std::shared_ptr<arrow::Array> to_array(const ParquetColumn& column, const std::string& where) {
  const std::string context = where + ": building the Arrow column";
  switch (column.kind) {
    case ParquetColumn::Kind::Tensor:
      return tensor_to_array(column.values, where);
    case ParquetColumn::Kind::String: {
      arrow::StringBuilder builder;
      ok_or_data(builder.AppendValues(column.strings), context);
      return value_or_data(builder.Finish(), context);
    }
    case ParquetColumn::Kind::StringList: {
      auto values = std::make_shared<arrow::StringBuilder>();
      arrow::ListBuilder builder(arrow::default_memory_pool(), values);
      for (const auto& row : column.string_lists) {
        ok_or_data(builder.Append(), context);
        ok_or_data(values->AppendValues(row), context);
      }
      return value_or_data(builder.Finish(), context);
    }
    case ParquetColumn::Kind::Image: {
      arrow::BinaryBuilder bytes;
      int64_t total = 0;
      for (const auto& png : column.strings) total += static_cast<int64_t>(png.size());
      ok_or_data(bytes.Reserve(static_cast<int64_t>(column.strings.size())), context);
      ok_or_data(bytes.ReserveData(total), context);
      for (const auto& png : column.strings) ok_or_data(bytes.Append(png), context);
      const auto n = static_cast<int64_t>(column.strings.size());
      // HF datasets' Image(): the bytes are embedded, the path is null.
      std::vector<std::shared_ptr<arrow::Array>> children{
          value_or_data(bytes.Finish(), context), value_or_data(arrow::MakeArrayOfNull(arrow::utf8(), n), context)};
      std::vector<std::shared_ptr<arrow::Field>> fields{arrow::field("bytes", arrow::binary()),
                                                        arrow::field("path", arrow::utf8())};
      return value_or_data(arrow::StructArray::Make(children, fields), context);
    }
  }
  throw util::DataError(where + ": unknown column kind");
}

std::string names_text(const arrow::Schema& schema) {
  return util::quoted_list(schema.field_names());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ParquetWriter

struct ParquetWriter::Impl {
  fs::path path;
  std::shared_ptr<const arrow::KeyValueMetadata> metadata;
  std::shared_ptr<arrow::io::FileOutputStream> sink;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  std::shared_ptr<arrow::Schema> schema;  // fixed by the first row group
  int64_t rows = 0;
  int groups = 0;
  bool closed = false;
  bool failed = false;

  std::string file_text() const { return "parquet file '" + path.string() + "'"; }

  // Drops the unfinished file. Never throws: it runs from the destructor and from error paths.
  void abandon() noexcept {
    try {
      if (sink && !sink->closed()) (void)sink->Abort();  // the writer's own teardown then has nowhere to write
      writer.reset();
      sink.reset();
    } catch (...) {  // a destructor deep in Arrow must not turn an abort into std::terminate
    }
    std::error_code ignored;
    fs::remove(path, ignored);
    closed = true;
  }

  void open_writer(const std::shared_ptr<arrow::Schema>& row_group_schema) {
    schema = metadata ? row_group_schema->WithMetadata(metadata) : row_group_schema;
    const auto properties =
        parquet::WriterProperties::Builder().compression(parquet::Compression::SNAPPY)->enable_dictionary()->build();
    // store_schema writes ARROW:schema as pyarrow does: readers then get fixed_size_list back
    // instead of plain list, and the field metadata of the schema.
    const auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    writer = value_or_io(
        parquet::arrow::FileWriter::Open(*schema, arrow::default_memory_pool(), sink, properties, arrow_properties),
        "cannot start writing " + file_text());
  }

  // Same names, order and types as the first row group, or a DataError saying what differs.
  void check_schema(const arrow::Schema& group, int group_index) const {
    const std::string prefix = file_text() + ", row group " + std::to_string(group_index) + ": ";
    if (group.num_fields() != schema->num_fields() || group.field_names() != schema->field_names())
      throw util::DataError(
          prefix + "columns " + names_text(group) + " differ from the file's columns " + names_text(*schema),
          "every row group of a parquet file has the same columns in the same order");
    for (int i = 0; i < group.num_fields(); ++i) {
      const auto& expected = schema->field(i)->type();
      const auto& found = group.field(i)->type();
      if (!expected->Equals(*found))
        throw util::DataError(prefix + "column '" + group.field(i)->name() + "' has type " + found->ToString() +
                                  ", but the file's schema has " + expected->ToString(),
                              "dtype and per-row shape of a column must be the same in every row group");
    }
  }
};

ParquetWriter::ParquetWriter(const fs::path& file, std::vector<std::pair<std::string, std::string>> schema_metadata)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = file;
  if (!schema_metadata.empty()) {
    std::vector<std::string> keys;
    std::vector<std::string> values;
    for (auto& [key, value] : schema_metadata) {
      keys.push_back(std::move(key));
      values.push_back(std::move(value));
    }
    impl_->metadata = arrow::key_value_metadata(std::move(keys), std::move(values));
  }
  try {
    impl_->sink = value_or_io(arrow::io::FileOutputStream::Open(file.string()), "cannot create " + impl_->file_text());
  } catch (const util::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw util::IoError("cannot create " + impl_->file_text() + ": " + e.what());
  }
}

ParquetWriter::~ParquetWriter() {
  if (!impl_->closed) impl_->abandon();
}

void ParquetWriter::write_row_group(const std::vector<ParquetColumn>& columns) {
  auto& impl = *impl_;
  if (impl.closed) throw std::logic_error(impl.file_text() + ": write_row_group after close");
  if (impl.failed) throw util::IoError(impl.file_text() + ": an earlier write failed; the file is abandoned");
  const int group_index = impl.groups;
  const std::string prefix = impl.file_text() + ", row group " + std::to_string(group_index);
  if (columns.empty()) throw util::DataError(prefix + ": no columns to write");

  // Validate and convert everything before the first byte is written.
  const int64_t rows = columns.front().rows();
  std::set<std::string> seen;
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& column : columns) {
    const std::string where = prefix + ", column '" + column.name + "'";
    if (column.name.empty()) throw util::DataError(prefix + ": a column has an empty name");
    if (!seen.insert(column.name).second) throw util::DataError(where + ": column name given twice");
    if (column.rows() != rows)
      throw util::DataError(where + ": has " + std::to_string(column.rows()) + " rows, but column '" +
                            columns.front().name + "' has " + std::to_string(rows));
    arrays.push_back(to_array(column, where));
    fields.push_back(arrow::field(column.name, arrays.back()->type()));
  }
  const auto group_schema = arrow::schema(fields);
  if (impl.schema) impl.check_schema(*group_schema, group_index);

  try {
    if (!impl.writer) impl.open_writer(group_schema);
    ok_or_io(impl.writer->NewRowGroup(), "cannot start a row group in " + impl.file_text());
    for (const auto& array : arrays) ok_or_io(impl.writer->WriteColumnChunk(*array), "cannot write " + prefix);
  } catch (const std::exception& e) {
    impl.failed = true;  // a half-written row group cannot be taken back
    if (dynamic_cast<const util::Error*>(&e)) throw;
    throw util::IoError("cannot write " + prefix + ": " + e.what());
  }
  impl.rows += rows;
  ++impl.groups;
}

void ParquetWriter::close() {
  auto& impl = *impl_;
  if (impl.closed) return;
  if (impl.failed) {
    impl.abandon();
    throw util::IoError(impl.file_text() + ": an earlier write failed; the file was removed");
  }
  if (!impl.writer) {
    impl.abandon();
    throw util::DataError(impl.file_text() +
                          ": closed without any row group; a parquet file needs a schema, so "
                          "nothing was written");
  }
  try {
    ok_or_io(impl.writer->Close(), "cannot finish " + impl.file_text());
    ok_or_io(impl.sink->Close(), "cannot close " + impl.file_text());
  } catch (const std::exception& e) {
    impl.abandon();
    if (dynamic_cast<const util::Error*>(&e)) throw;
    throw util::IoError("cannot finish " + impl.file_text() + ": " + e.what());
  }
  impl.writer.reset();
  impl.sink.reset();
  impl.closed = true;
}

int64_t ParquetWriter::rows_written() const {
  return impl_->rows;
}
int ParquetWriter::num_row_groups_written() const {
  return impl_->groups;
}
const fs::path& ParquetWriter::path() const {
  return impl_->path;
}

int64_t ParquetWriter::bytes_written() const {
  if (!impl_->sink || impl_->sink->closed()) {
    std::error_code error;
    const auto size = fs::file_size(impl_->path, error);
    return error ? 0 : static_cast<int64_t>(size);
  }
  const auto position = impl_->sink->Tell();
  return position.ok() ? *position : 0;
}

}  // namespace lrhost::data
