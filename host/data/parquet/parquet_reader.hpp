// Reads one parquet file of a LeRobot dataset (frame data, episodes metadata, tasks) into memory and
// hands its columns out as torch tensors, strings or PNG byte strings. Arrow stays behind a pimpl:
// this header includes no Arrow header, so only parquet_reader.cpp pays Arrow's compile time.
// Errors: util::IoError for a missing, unreadable or corrupt file; util::DataError for a column that
// is absent or does not hold what the caller expects (the message names file, column, both types).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lrhost::data {

// A column of byte strings kept in Arrow memory (PNG bytes of image columns), so that decoding
// threads can read image bytes without a copy per frame. Cheap to copy (shared ownership of the
// immutable Arrow buffers); concurrent at() calls are safe. Views stay valid while any copy lives.
class ByteColumn {
 public:
  ByteColumn();
  int64_t size() const;
  // Bytes of one row; std::out_of_range for a row outside [0, size()).
  std::string_view at(int64_t row) const;

  struct Impl;  // defined in parquet_reader.cpp (holds Arrow arrays)
  explicit ByteColumn(std::shared_ptr<const Impl> impl);

 private:
  std::shared_ptr<const Impl> impl_;
};

class ParquetReader {
 public:
  // Reads the whole file into memory (single-threaded: loader threads run readers in parallel).
  explicit ParquetReader(const std::filesystem::path& file);
  ~ParquetReader();
  ParquetReader(ParquetReader&&) noexcept;
  ParquetReader& operator=(ParquetReader&&) noexcept;
  ParquetReader(const ParquetReader&) = delete;
  ParquetReader& operator=(const ParquetReader&) = delete;

  const std::filesystem::path& path() const;
  int64_t num_rows() const;
  int num_row_groups() const;
  int64_t row_group_num_rows(int group) const;
  std::vector<std::string> column_names() const;
  bool has_column(const std::string& name) const;
  // Arrow type text ("fixed_size_list<element: float>[6]"), for messages and `dataset info`.
  std::string column_type(const std::string& name) const;

  // Numeric column as a [num_rows, *shape] tensor of `dtype`. Accepted storage: a primitive column
  // (shape {}), list / large_list / fixed_size_list of primitives (shape {n}), lists nested k deep for
  // k-D shapes (HF Array2D..5D storage; extension types are read through their storage), bool.
  // Shapes with one element ({} or {1}, {1, 1}, ...) also match any nesting whose lists all have one
  // element. The stored value type must be exactly `dtype`. Wrong type, a row of another length, or
  // a null → DataError naming file, column, expected dtype and shape, and what was found.
  torch::Tensor read_tensor(const std::string& column, torch::ScalarType dtype,
                            const std::vector<int64_t>& shape) const;
  // The per-row shape the file stores ({} for a primitive column; variable list lengths from row 0).
  std::vector<int64_t> stored_shape(const std::string& column) const;
  // Like read_tensor with the file's own value type and stored_shape(), then cast to `dtype`: for
  // metadata columns whose width varies between writers (int32/int64, float32/float64).
  torch::Tensor read_tensor_cast(const std::string& column, torch::ScalarType dtype) const;
  std::vector<std::string> read_strings(const std::string& column) const;                    // string, large_string
  std::vector<std::vector<std::string>> read_string_lists(const std::string& column) const;  // list<string>
  // HF Image struct {bytes: binary, path: string} → its bytes; a plain binary column also works.
  // A row without bytes (null struct or null bytes, e.g. an image stored by path only) → DataError.
  ByteColumn read_image_bytes(const std::string& column) const;
  // Key-value metadata of the file ("pandas", "huggingface", ...); nullopt when absent.
  std::optional<std::string> schema_metadata(const std::string& key) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrhost::data
