// Safetensors reading (memory-mapped, strictly validated) and atomic writing; see safetensors.hpp.
#include "host/io/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "host/io/verified_reads.hpp"
#include "host/io/written_checksums.hpp"
#include "host/util/error.hpp"

namespace lrhost::io {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference implementation's limit

const std::vector<std::pair<std::string, c10::ScalarType>>& dtype_table() {
  static const std::vector<std::pair<std::string, c10::ScalarType>> table{{"F64", c10::kDouble},
                                                                          {"F32", c10::kFloat},
                                                                          {"F16", c10::kHalf},
                                                                          {"BF16", c10::kBFloat16},
                                                                          {"I64", c10::kLong},
                                                                          {"I32", c10::kInt},
                                                                          {"I16", c10::kShort},
                                                                          {"I8", c10::kChar},
                                                                          {"U8", c10::kByte},
                                                                          {"BOOL", c10::kBool},
                                                                          {"U16", c10::kUInt16},
                                                                          {"U32", c10::kUInt32},
                                                                          {"U64", c10::kUInt64},
                                                                          {"F8_E4M3", c10::kFloat8_e4m3fn},
                                                                          {"F8_E5M2", c10::kFloat8_e5m2}};
  return table;
}

// The mapped file; tensors that view it keep it alive through their deleter.
struct Mapping {
  void* address = MAP_FAILED;
  std::size_t size = 0;
  ~Mapping() {
    if (address != MAP_FAILED) ::munmap(address, size);
  }
};

SafetensorsContent parse(const uint8_t* data, std::size_t size, const std::string& what,
                         const std::shared_ptr<Mapping>& mapping) {
  if (size < 8)
    throw util::DataError(what + ": " + std::to_string(size) + " bytes is too short for a safetensors file");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | data[i];
  if (header_size > kMaxHeaderBytes || header_size > size - 8)
    throw util::DataError(what + ": header length " + std::to_string(header_size) + " does not fit in the " +
                          std::to_string(size) + "-byte file (truncated or not safetensors)");
  json header;
  try {
    header = json::parse(data + 8, data + 8 + header_size);
  } catch (const json::exception& error) {
    throw util::DataError(what + ": the header is not valid JSON: " + error.what());
  }
  if (!header.is_object()) throw util::DataError(what + ": the header must be a JSON object");
  const uint8_t* buffer = data + 8 + header_size;
  const uint64_t buffer_size = size - 8 - header_size;

  SafetensorsContent content;
  struct Entry {
    std::string name;
    c10::ScalarType type;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [name, spec] : header.items()) {
    std::string where = what + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      if (!spec.is_object()) throw util::DataError(what + ": __metadata__ must be an object of strings");
      for (const auto& [key, value] : spec.items()) {
        if (!value.is_string()) throw util::DataError(what + ": __metadata__['" + key + "'] must be a string");
        content.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!spec.is_object() || !spec.contains("dtype") || !spec["dtype"].is_string() || !spec.contains("shape") ||
        !spec["shape"].is_array() || !spec.contains("data_offsets") || !spec["data_offsets"].is_array() ||
        spec["data_offsets"].size() != 2)
      throw util::DataError(where + " needs string 'dtype', list 'shape' and two 'data_offsets'");
    Entry entry{name, scalar_type_from_safetensors(spec["dtype"].get<std::string>(), where), {}, 0, 0};
    uint64_t numel = 1;
    for (const json& dim : spec["shape"]) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > (1ull << 40))
        throw util::DataError(where + ": shape " + spec["shape"].dump() + " must hold non-negative integers");
      entry.shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
      numel = entry.shape.back() == 0
                  ? 0
                  : (numel > (1ull << 62) / entry.shape.back() ? (1ull << 62) : numel * entry.shape.back());
    }
    for (int i = 0; i < 2; ++i)
      if (!spec["data_offsets"][i].is_number_unsigned())
        throw util::DataError(where + ": data_offsets must be two non-negative integers");
    entry.begin = spec["data_offsets"][0].get<uint64_t>();
    entry.end = spec["data_offsets"][1].get<uint64_t>();
    if (entry.begin > entry.end || entry.end > buffer_size)
      throw util::DataError(where + ": data_offsets [" + std::to_string(entry.begin) + ", " +
                            std::to_string(entry.end) + ") are outside the " + std::to_string(buffer_size) +
                            "-byte data buffer");
    // Checked before multiplying: a shape whose byte size wraps around 2^64 (e.g. [2^31, 2^31] F64
    // with offsets [0, 0]) would otherwise pass as 0 bytes and reach the allocator.
    const uint64_t element = c10::elementSize(entry.type);
    if (numel > std::numeric_limits<uint64_t>::max() / element)
      throw util::DataError(where + ": dtype " + spec["dtype"].get<std::string>() + " and shape " +
                            spec["shape"].dump() + " need more than 2^64 bytes");
    uint64_t expected = numel * element;
    if (entry.end - entry.begin != expected)
      throw util::DataError(where + ": holds " + std::to_string(entry.end - entry.begin) + " bytes, but dtype " +
                            spec["dtype"].get<std::string>() + " and shape " + spec["shape"].dump() + " need " +
                            std::to_string(expected));
    entries.push_back(std::move(entry));
  }
  // The tensors must tile the buffer exactly: no overlaps, no holes, nothing after the last one.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t cursor = 0;
  for (const Entry& entry : entries) {
    if (entry.begin != cursor)
      throw util::DataError(what + ": tensor '" + entry.name + "' starts at byte " + std::to_string(entry.begin) +
                            (entry.begin < cursor ? ", overlapping the previous tensor" : ", leaving a gap") +
                            " (expected " + std::to_string(cursor) + ")");
    cursor = entry.end;
  }
  if (cursor != buffer_size)
    throw util::DataError(what + ": " + std::to_string(buffer_size - cursor) + " bytes after the last tensor");

  for (const Entry& entry : entries) {
    const uint8_t* start = buffer + entry.begin;
    auto options = torch::TensorOptions().dtype(entry.type);
    torch::Tensor tensor;
    bool aligned = reinterpret_cast<uintptr_t>(start) % c10::elementSize(entry.type) == 0;
    if (mapping && aligned && entry.end > entry.begin) {
      // View the mapping (read-only pages: callers must not write in place; clone() to modify).
      tensor = torch::from_blob(
          const_cast<uint8_t*>(start), entry.shape, [mapping](void*) {}, options);
    } else {
      tensor = torch::empty(entry.shape, options);
      if (entry.end > entry.begin) std::memcpy(tensor.data_ptr(), start, entry.end - entry.begin);
    }
    content.tensors.emplace_back(entry.name, tensor);
  }
  return content;
}
}  // namespace

const torch::Tensor* SafetensorsContent::find(const std::string& name) const {
  for (const auto& [key, tensor] : tensors)
    if (key == name) return &tensor;
  return nullptr;
}

const torch::Tensor& SafetensorsContent::at(const std::string& name) const {
  if (const torch::Tensor* found = find(name)) return *found;
  throw util::DataError("safetensors: no tensor named '" + name + "'");
}

std::string safetensors_dtype(c10::ScalarType type) {
  for (const auto& [name, candidate] : dtype_table())
    if (candidate == type) return name;
  throw util::DataError(std::string("safetensors cannot store dtype ") + c10::toString(type));
}

c10::ScalarType scalar_type_from_safetensors(const std::string& dtype, const std::string& what) {
  for (const auto& [name, type] : dtype_table())
    if (name == dtype) return type;
  throw util::DataError(what + ": unknown dtype '" + dtype + "'");
}

SafetensorsContent parse_safetensors(const uint8_t* data, std::size_t size, const std::string& what) {
  return parse(data, size, what, nullptr);
}

SafetensorsContent read_safetensors(const fs::path& file, MapMode mode) {
  const std::string what = file.string();
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw util::IoError("cannot open " + what + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw util::IoError(what + " is not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<std::size_t>(info.st_size);
  // Copy-on-write: the tensors may be written (a page is then copied privately); the file never is.
  const int protection = mode == MapMode::copy_on_write ? PROT_READ | PROT_WRITE : PROT_READ;
  if (mapping->size > 0) mapping->address = ::mmap(nullptr, mapping->size, protection, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping->size > 0 && mapping->address == MAP_FAILED) throw util::IoError("cannot map " + what);
  const auto* data = mapping->size > 0 ? static_cast<const uint8_t*>(mapping->address) : nullptr;
  // Under a VerifiedReads scope (resume), the bytes are checked as they are first read, before parsing.
  VerifiedReads::check(file, data, mapping->size);
  return parse(data, mapping->size, what, mapping);
}

void write_safetensors(const fs::path& file, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> contiguous;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__" || header.contains(name))
      throw util::DataError("safetensors: tensor name '" + name + "' is empty, reserved or repeated (" + file.string() +
                            ")");
    torch::Tensor data = tensor.detach().to(torch::kCPU).contiguous();
    uint64_t bytes = data.nbytes();
    header[name] = {{"dtype", safetensors_dtype(data.scalar_type())},
                    {"shape", data.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    contiguous.push_back(data);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data buffer starts 8-byte aligned
  fs::path temporary = file;
  temporary += ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw util::IoError("cannot create " + temporary.string() + ": " + std::strerror(errno));
  // Under a WrittenChecksums scope (a checkpoint save) the bytes are checksummed as they are written,
  // so the checkpoint's manifest does not read the file back.
  std::optional<ChecksumStream> checksums;
  if (WrittenChecksums::active()) checksums.emplace();
  auto write_all = [&](const void* bytes, std::size_t count) {
    if (checksums) checksums->add(bytes, count);
    const auto* cursor = static_cast<const uint8_t*>(bytes);
    while (count > 0) {
      ssize_t written = ::write(fd, cursor, count);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        ::close(fd);
        ::unlink(temporary.c_str());
        throw util::IoError("cannot write " + temporary.string() + ": " + std::strerror(errno));
      }
      cursor += written;
      count -= static_cast<std::size_t>(written);
    }
  };
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  write_all(length, 8);
  write_all(text.data(), text.size());
  for (const torch::Tensor& data : contiguous)
    if (data.nbytes() > 0) write_all(data.data_ptr(), data.nbytes());
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temporary.c_str());
    throw util::IoError("cannot flush " + temporary.string());
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  if (ec) {
    ::unlink(temporary.c_str());
    throw util::IoError("cannot rename " + temporary.string() + " to " + file.string() + ": " + ec.message());
  }
  if (checksums) WrittenChecksums::record(file, *checksums);
}

}  // namespace lrhost::io
