// Arrow array <-> torch tensor conversion for the parquet reader and writer. Numeric columns of
// LeRobot datasets are primitive columns or (nested) lists of primitives with the same length in
// every row; these helpers check that shape once per list level and then copy the contiguous leaf
// buffer in one memcpy per chunk, so reading a [frames, 14] float32 column costs a memcpy, not a
// per-element loop.
#include "host/data/parquet/arrow_tensor.hpp"

#include <cstring>
#include <limits>

#include "host/util/error.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::data::arrow_tensor {

std::shared_ptr<arrow::DataType> arrow_type_for(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat:
      return arrow::float32();
    case torch::kDouble:
      return arrow::float64();
    case torch::kHalf:
      return arrow::float16();
    case torch::kLong:
      return arrow::int64();
    case torch::kInt:
      return arrow::int32();
    case torch::kShort:
      return arrow::int16();
    case torch::kChar:
      return arrow::int8();
    case torch::kByte:
      return arrow::uint8();
    case torch::kBool:
      return arrow::boolean();
    default:
      return nullptr;
  }
}

std::optional<torch::ScalarType> torch_type_for(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::FLOAT:
      return torch::kFloat;
    case arrow::Type::DOUBLE:
      return torch::kDouble;
    case arrow::Type::HALF_FLOAT:
      return torch::kHalf;
    case arrow::Type::INT64:
      return torch::kLong;
    case arrow::Type::INT32:
      return torch::kInt;
    case arrow::Type::INT16:
      return torch::kShort;
    case arrow::Type::INT8:
      return torch::kChar;
    case arrow::Type::UINT8:
      return torch::kByte;
    case arrow::Type::BOOL:
      return torch::kBool;
    default:
      return std::nullopt;
  }
}

std::shared_ptr<arrow::DataType> storage_type(std::shared_ptr<arrow::DataType> type) {
  while (type->id() == arrow::Type::EXTENSION) type = static_cast<const arrow::ExtensionType&>(*type).storage_type();
  return type;
}

std::shared_ptr<arrow::Array> storage_array(std::shared_ptr<arrow::Array> array) {
  while (array->type_id() == arrow::Type::EXTENSION)
    array = static_cast<const arrow::ExtensionArray&>(*array).storage();
  return array;
}

namespace {

bool is_any_list(arrow::Type::type id) {
  return id == arrow::Type::LIST || id == arrow::Type::LARGE_LIST || id == arrow::Type::FIXED_SIZE_LIST;
}

std::shared_ptr<arrow::DataType> list_value_type(const arrow::DataType& type) {
  return static_cast<const arrow::BaseListType&>(type).value_type();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// A run of `count` consecutive elements of one array, starting at logical index `start`.
struct Span {
  std::shared_ptr<arrow::Array> array;
  int64_t start = 0;
  int64_t count = 0;
};

// Null slots would silently become garbage values in the tensor; LeRobot columns never hold them.
void check_no_nulls(const Span& span, int level, int64_t first_row, const std::string& where) {
  if (span.array->null_count() == 0) return;
  for (int64_t i = 0; i < span.count; ++i) {
    if (!span.array->IsNull(span.start + i)) continue;
    if (level == 0) throw util::DataError(where + ": null value in row " + std::to_string(first_row + i));
    throw util::DataError(where + ": null value inside the list of a row near row " + std::to_string(first_row) +
                          " (nesting level " + std::to_string(level) + ")");
  }
}

// Checks that every one of the span's lists has length n and returns the span of their elements.
template <class ListArray>
Span descend_variable(const ListArray& list, const Span& span, int64_t n, int level, int64_t first_row,
                      const std::string& where) {
  for (int64_t i = 0; i < span.count; ++i) {
    const int64_t length = list.value_length(span.start + i);
    if (length == n) continue;
    if (level == 0)
      throw util::DataError(where + ": row " + std::to_string(first_row + i) + " has " + std::to_string(length) +
                            " values, expected " + std::to_string(n));
    throw util::DataError(where + ": an inner list (nesting level " + std::to_string(level) + ") near row " +
                          std::to_string(first_row) + " has " + std::to_string(length) + " values, expected " +
                          std::to_string(n));
  }
  const int64_t start = span.count ? static_cast<int64_t>(list.value_offset(span.start)) : 0;
  return Span{storage_array(list.values()), start, span.count * n};
}

// Copies one chunk (already known to have the expected type) into `dst`; returns bytes written.
int64_t copy_chunk(const std::shared_ptr<arrow::Array>& chunk, const std::vector<int64_t>& row_shape, uint8_t* dst,
                   int64_t first_row, const std::string& where) {
  Span span{storage_array(chunk), 0, chunk->length()};
  for (int level = 0; level < static_cast<int>(row_shape.size()); ++level) {
    check_no_nulls(span, level, first_row, where);
    const auto& array = *span.array;
    const int64_t n = row_shape[level];
    switch (array.type_id()) {
      case arrow::Type::FIXED_SIZE_LIST: {
        const auto& list = static_cast<const arrow::FixedSizeListArray&>(array);
        const int64_t start = list.value_offset(span.start);
        span = Span{storage_array(list.values()), start, span.count * n};
        break;
      }
      case arrow::Type::LIST:
        span = descend_variable(static_cast<const arrow::ListArray&>(array), span, n, level, first_row, where);
        break;
      case arrow::Type::LARGE_LIST:
        span = descend_variable(static_cast<const arrow::LargeListArray&>(array), span, n, level, first_row, where);
        break;
      default:
        throw util::DataError(where + ": unexpected list type " + array.type()->ToString());
    }
  }
  check_no_nulls(span, static_cast<int>(row_shape.size()), first_row, where);
  const auto& leaf = *span.array;
  if (leaf.type_id() == arrow::Type::BOOL) {
    // Arrow packs booleans into bits, torch stores one byte each: this is the one per-element loop.
    const auto& bits = static_cast<const arrow::BooleanArray&>(leaf);
    auto* out = reinterpret_cast<bool*>(dst);
    for (int64_t i = 0; i < span.count; ++i) out[i] = bits.Value(span.start + i);
    return span.count;
  }
  const int width = static_cast<const arrow::FixedWidthType&>(*leaf.type()).bit_width() / 8;
  const int64_t bytes = span.count * width;
  if (bytes == 0) return 0;
  const auto& buffer = leaf.data()->buffers[1];
  const int64_t begin = (leaf.offset() + span.start) * width;
  if (!buffer || begin + bytes > buffer->size())
    throw util::DataError(where + ": value buffer is shorter than the column's row count says");
  std::memcpy(dst, buffer->data() + begin, static_cast<std::size_t>(bytes));
  return bytes;
}

}  // namespace

int list_depth(const arrow::DataType& type) {
  int depth = 0;
  for (auto t = storage_type(type.GetSharedPtr()); is_any_list(t->id()); t = storage_type(list_value_type(*t))) ++depth;
  return depth;
}

std::shared_ptr<arrow::DataType> leaf_type(std::shared_ptr<arrow::DataType> type) {
  type = storage_type(std::move(type));
  while (is_any_list(type->id())) type = storage_type(list_value_type(*type));
  return type;
}

std::vector<int64_t> stored_row_shape(const arrow::ChunkedArray& column) {
  // Follow the first row down the nesting: variable lists take its lengths. Once there is no row to
  // follow (empty column, null or empty list), the remaining variable levels count as 0.
  std::shared_ptr<arrow::Array> array;
  for (const auto& chunk : column.chunks())
    if (chunk->length() > 0) {
      array = storage_array(chunk);
      break;
    }
  int64_t index = 0;
  std::vector<int64_t> shape;
  for (auto type = storage_type(column.type()); is_any_list(type->id()); type = storage_type(list_value_type(*type))) {
    const bool have_row = array && index < array->length() && array->IsValid(index);
    int64_t length = 0;
    std::shared_ptr<arrow::Array> child;
    if (type->id() == arrow::Type::FIXED_SIZE_LIST) {
      length = static_cast<const arrow::FixedSizeListType&>(*type).list_size();
      if (have_row) {
        const auto& list = static_cast<const arrow::FixedSizeListArray&>(*array);
        index = list.value_offset(index);
        child = list.values();
      }
    } else if (have_row && type->id() == arrow::Type::LIST) {
      const auto& list = static_cast<const arrow::ListArray&>(*array);
      length = list.value_length(index);
      index = list.value_offset(index);
      child = list.values();
    } else if (have_row) {
      const auto& list = static_cast<const arrow::LargeListArray&>(*array);
      length = list.value_length(index);
      index = list.value_offset(index);
      child = list.values();
    }
    shape.push_back(length);
    array = (child && length > 0) ? storage_array(child) : nullptr;
  }
  return shape;
}

std::string describe(torch::ScalarType dtype, const std::vector<int64_t>& row_shape) {
  return util::dtype_name(dtype) + " " + shape_text(row_shape);
}

void copy_column(const arrow::ChunkedArray& column, const std::vector<int64_t>& row_shape,
                 const std::vector<int64_t>& requested_shape, torch::Tensor& out, const std::string& where) {
  // Check the type level by level before touching data, so a wrong column fails with its type.
  const auto dtype = out.scalar_type();
  const std::string expected =
      "expected " + describe(dtype, requested_shape) + " per row, found " + column.type()->ToString();
  auto type = storage_type(column.type());
  for (const int64_t n : row_shape) {
    if (!is_any_list(type->id())) throw util::DataError(where + ": " + expected);
    if (type->id() == arrow::Type::FIXED_SIZE_LIST &&
        static_cast<const arrow::FixedSizeListType&>(*type).list_size() != n)
      throw util::DataError(where + ": " + expected);
    type = storage_type(list_value_type(*type));
  }
  const auto want = arrow_type_for(dtype);
  if (!want || !type->Equals(*want)) throw util::DataError(where + ": " + expected);

  // Data errors (row lengths, nulls) also say what was asked for.
  const std::string where_expected = where + " (expected " + describe(dtype, requested_shape) + " per row)";
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  int64_t row = 0;
  for (const auto& chunk : column.chunks()) {
    if (chunk->length() == 0) continue;
    dst += copy_chunk(chunk, row_shape, dst, row, where_expected);
    row += chunk->length();
  }
}

std::shared_ptr<arrow::DataType> tensor_arrow_type(torch::ScalarType dtype, const std::vector<int64_t>& row_shape,
                                                   const std::string& where) {
  auto type = arrow_type_for(dtype);
  if (!type)
    throw util::DataError(where + ": dtype " + util::dtype_name(dtype) + " cannot be stored in parquet",
                          "convert the tensor to float32 (or another numeric dtype Arrow has) before writing");
  for (auto it = row_shape.rbegin(); it != row_shape.rend(); ++it) {
    if (*it <= 0 || *it > std::numeric_limits<int32_t>::max())
      throw util::DataError(where + ": per-row shape " + shape_text(row_shape) +
                            " has a dimension parquet fixed-size lists cannot hold (must be 1..2^31-1)");
    type = arrow::fixed_size_list(type, static_cast<int32_t>(*it));
  }
  return type;
}

std::shared_ptr<arrow::Array> tensor_to_array(const torch::Tensor& values, const std::string& where) {
  if (!values.defined()) throw util::DataError(where + ": tensor column has no tensor");
  if (values.dim() < 1)
    throw util::DataError(where + ": tensor column needs a leading row dimension, got a 0-d tensor");
  const auto t = values.detach().to(torch::kCPU).contiguous();
  const std::vector<int64_t> row_shape(t.sizes().begin() + 1, t.sizes().end());
  const auto type = tensor_arrow_type(t.scalar_type(), row_shape, where);
  const auto leaf = arrow_type_for(t.scalar_type());
  const int64_t n = t.numel();
  const std::string context = where + ": converting the tensor to Arrow";

  std::shared_ptr<arrow::Array> array;
  if (t.scalar_type() == torch::kBool) {
    arrow::BooleanBuilder builder;
    ok_or_data(builder.AppendValues(reinterpret_cast<const uint8_t*>(t.data_ptr<bool>()), n), context);
    array = value_or_data(builder.Finish(), context);
  } else {
    // Copied, not wrapped: the Arrow array must not depend on the caller keeping the tensor alive.
    const int64_t bytes = n * static_cast<int64_t>(t.element_size());
    std::shared_ptr<arrow::Buffer> buffer = value_or_data(arrow::AllocateBuffer(bytes), context);
    if (bytes) std::memcpy(buffer->mutable_data(), t.data_ptr(), static_cast<std::size_t>(bytes));
    array = arrow::MakeArray(arrow::ArrayData::Make(leaf, n, {nullptr, std::move(buffer)}, 0));
  }
  for (auto it = row_shape.rbegin(); it != row_shape.rend(); ++it)
    array = value_or_data(arrow::FixedSizeListArray::FromArrays(array, static_cast<int32_t>(*it)), context);
  return array;
}

void throw_io(const std::string& context, const arrow::Status& status) {
  throw util::IoError(context + ": " + status.ToString());
}

void throw_data(const std::string& context, const arrow::Status& status) {
  throw util::DataError(context + ": " + status.ToString());
}

}  // namespace lrhost::data::arrow_tensor
