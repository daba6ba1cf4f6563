// Private helpers of the parquet reader and writer: conversion between Arrow arrays and torch
// tensors, and the Arrow-error-to-lrhost-exception translation. This header includes Arrow, so only
// host/data/parquet/*.cpp may include it; the public headers stay Arrow-free to keep Arrow's compile
// time out of the rest of the code base.
#pragma once
#include <arrow/api.h>
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::data::arrow_tensor {

// The Arrow type that stores one element of `dtype`, or nullptr where Arrow has none (bfloat16,
// complex): the writer reports those instead of silently widening.
std::shared_ptr<arrow::DataType> arrow_type_for(torch::ScalarType dtype);
// The torch dtype of an Arrow primitive type, or nullopt (strings, structs, uint16..uint64).
std::optional<torch::ScalarType> torch_type_for(const arrow::DataType& type);

// Extension types (HF Array2D..5D, or any registered one) are read through their storage: the
// extension adds meaning, never layout.
std::shared_ptr<arrow::DataType> storage_type(std::shared_ptr<arrow::DataType> type);
std::shared_ptr<arrow::Array> storage_array(std::shared_ptr<arrow::Array> array);

// Nesting depth of list types (list, large_list, fixed_size_list) above the leaf, and the leaf.
int list_depth(const arrow::DataType& type);
std::shared_ptr<arrow::DataType> leaf_type(std::shared_ptr<arrow::DataType> type);

// Per-row shape of a numeric column as the file stores it: fixed_size_list sizes come from the type,
// variable list lengths from the first row (0 where the column has no rows).
std::vector<int64_t> stored_row_shape(const arrow::ChunkedArray& column);

// Copies a (possibly nested-list) numeric column into `out` ([rows, *row_shape], contiguous CPU,
// dtype matching the leaf), checking that every list at level l has length row_shape[l] and that
// there are no nulls. Fixed-size data is copied with one memcpy per chunk. Throws DataError whose
// message starts with `where` ("parquet file 'x', column 'y'") and names `requested_shape` (the
// caller's shape, which may differ from row_shape by dimensions of size 1) as expected.
void copy_column(const arrow::ChunkedArray& column, const std::vector<int64_t>& row_shape,
                 const std::vector<int64_t>& requested_shape, torch::Tensor& out, const std::string& where);

// A [rows, d1, ..., dk] tensor as an Arrow array: the primitive column for k = 0, otherwise
// fixed_size_list nested k deep (outermost = d1), values row-major. Throws DataError for dtypes
// Arrow cannot store or zero-sized inner dimensions.
std::shared_ptr<arrow::Array> tensor_to_array(const torch::Tensor& values, const std::string& where);

// The Arrow type tensor_to_array produces for a tensor of this dtype and per-row shape.
std::shared_ptr<arrow::DataType> tensor_arrow_type(torch::ScalarType dtype, const std::vector<int64_t>& row_shape,
                                                   const std::string& where);

// "float32 [3, 2]" for messages.
std::string describe(torch::ScalarType dtype, const std::vector<int64_t>& row_shape);

// Arrow reports failures as Status values; lrhost as exceptions. `context` says what was being done
// and to which file, so the message stands on its own.
[[noreturn]] void throw_io(const std::string& context, const arrow::Status& status);
[[noreturn]] void throw_data(const std::string& context, const arrow::Status& status);
inline void ok_or_io(const arrow::Status& status, const std::string& context) {
  if (!status.ok()) throw_io(context, status);
}
inline void ok_or_data(const arrow::Status& status, const std::string& context) {
  if (!status.ok()) throw_data(context, status);
}
template <class T>
T value_or_io(arrow::Result<T> result, const std::string& context) {
  if (!result.ok()) throw_io(context, result.status());
  return std::move(result).ValueUnsafe();
}
template <class T>
T value_or_data(arrow::Result<T> result, const std::string& context) {
  if (!result.ok()) throw_data(context, result.status());
  return std::move(result).ValueUnsafe();
}

}  // namespace lrhost::data::arrow_tensor
