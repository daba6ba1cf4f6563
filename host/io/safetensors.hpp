// The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the
// raw little-endian tensor bytes. LeRobot stores model weights, optimizer state and normalization
// statistics in it. Reading memory-maps the file and hands out tensors that view the mapping (the
// mapping lives as long as any of them), after checking everything a malformed file can get wrong:
// header bounds, JSON, dtypes, shapes, offsets inside the buffer, sizes matching shapes, no overlaps
// or holes. Writing is atomic (temporary file, fsync, rename).
#pragma once
#include <torch/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::io {

struct SafetensorsContent {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // in file offset order
  std::map<std::string, std::string> metadata;
  const torch::Tensor& at(const std::string& name) const;    // DataError naming the missing key
  const torch::Tensor* find(const std::string& name) const;  // nullptr when absent
};

// Tensors are written contiguous, on CPU, in the order given; names must be unique and non-empty.
void write_safetensors(const std::filesystem::path& file,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// read_only: the tensors must not be written (the pages are the file's). copy_on_write: they may be,
// each written page becoming a private copy; pages only read stay the file's page cache, shared by
// every process mapping it (what lets N ranks each use a part of one checkpoint without N copies).
enum class MapMode { read_only, copy_on_write };
// Throws util::IoError (unreadable) or util::DataError (malformed), naming the file and the problem.
SafetensorsContent read_safetensors(const std::filesystem::path& file, MapMode mode = MapMode::read_only);
// The same checks on bytes in memory (`what` names the source in messages); tensors are copies.
SafetensorsContent parse_safetensors(const uint8_t* data, std::size_t size, const std::string& what);

// "F32", "BF16", ... for a LibTorch dtype and back (DataError for dtypes safetensors lacks).
std::string safetensors_dtype(c10::ScalarType type);
c10::ScalarType scalar_type_from_safetensors(const std::string& dtype, const std::string& what);

}  // namespace lrhost::io
