// Writes parquet files the way LeRobot's pyarrow.ParquetWriter(compression="snappy",
// use_dictionary=True) does: one row group per write call (LeRobot writes one per episode), schema
// metadata such as "huggingface" carried into the file, nested columns that pyarrow, pandas and HF
// datasets read back with the expected types. Arrow stays behind a pimpl; this header includes no
// Arrow header.
//
// On-disk layout of a Tensor column with values [rows, d1, ..., dk] (row-major):
//   k = 0 → primitive column (float, double, halffloat, int8/16/32/64, uint8, bool);
//   k = 1 → fixed_size_list<item: T>[d1]            (HF Sequence(length=d1));
//   k ≥ 2 → fixed_size_list<fixed_size_list<...<T>[dk]...>[d2]>[d1], outermost list = d1.
// ParquetReader::read_tensor reads all of these back (and HF's list<list<T>> Array2D storage).
// Image columns are struct<bytes: binary, path: string> with a null path (HF datasets' Image()).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::data {

// One column of one row group to write.
struct ParquetColumn {
  enum class Kind { Tensor, String, StringList, Image };
  std::string name;
  Kind kind = Kind::Tensor;
  torch::Tensor values;                                // Tensor: [rows, *row_shape], see layout above
  std::vector<std::string> strings;                    // String: utf8 values; Image: PNG (or any) bytes
  std::vector<std::vector<std::string>> string_lists;  // StringList → list<string>

  static ParquetColumn tensor(std::string name, torch::Tensor values);
  static ParquetColumn string(std::string name, std::vector<std::string> values);
  static ParquetColumn string_list(std::string name, std::vector<std::vector<std::string>> values);
  static ParquetColumn image(std::string name, std::vector<std::string> png_bytes);

  int64_t rows() const;
};

class ParquetWriter {
 public:
  // Creates (or truncates) `file` at once, so an unwritable path fails here with IoError. The
  // metadata pairs become the schema's key-value metadata (e.g. {"huggingface", json}).
  ParquetWriter(const std::filesystem::path& file,
                std::vector<std::pair<std::string, std::string>> schema_metadata = {});
  // Without close(): aborts without throwing and removes the partial file (no half file remains).
  ~ParquetWriter();
  ParquetWriter(const ParquetWriter&) = delete;
  ParquetWriter& operator=(const ParquetWriter&) = delete;

  // Exactly one row group per call. The first call fixes the schema (names, order, types, per-row
  // shapes); a later call that differs, columns of different row counts, duplicate names or a dtype
  // parquet cannot store → DataError, and the writer stays usable. An I/O failure → IoError, after
  // which the file is abandoned (the destructor removes it).
  void write_row_group(const std::vector<ParquetColumn>& columns);
  // Writes the footer and closes the file; IoError on failure. A file needs a schema, so closing a
  // writer that wrote no row group is a DataError (and removes the file). A second close is a no-op.
  void close();
  int64_t rows_written() const;
  int num_row_groups_written() const;
  // Bytes in the file so far (grows per row group): for callers that roll over to a new file at a size.
  int64_t bytes_written() const;
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrhost::data
