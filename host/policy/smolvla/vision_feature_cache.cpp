// Vision feature cache: manifest check under a file lock, sparse record files, pread/pwrite lookups.
#include "host/policy/smolvla/vision_feature_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::smolvla {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_io(const std::string& what, const fs::path& file) {
  throw util::IoError("vision feature cache: " + what + " " + file.string() + ": " + std::strerror(errno));
}

// The folder's lock, held while the manifest is checked and the files are sized.
class DirLock {
 public:
  explicit DirLock(const fs::path& file) : fd_(::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ < 0) fail_io("cannot open", file);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) fail_io("cannot lock", file);
  }
  ~DirLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

int open_sized(const fs::path& file, int64_t bytes) {
  int fd = ::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) fail_io("cannot open", file);
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail_io("cannot stat", file);
  // Sparse: ftruncate reserves no blocks, only written records take disk space.
  if (info.st_size < bytes && ::ftruncate(fd, bytes) != 0) fail_io("cannot size", file);
  return fd;
}

void read_exact(int fd, void* data, std::size_t size, int64_t offset, const fs::path& file) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    ssize_t got = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail_io("cannot read", file);
    bytes += got;
    size -= static_cast<std::size_t>(got);
    offset += got;
  }
}

void write_exact(int fd, const void* data, std::size_t size, int64_t offset, const fs::path& file) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t put = ::pwrite(fd, bytes, size, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail_io("cannot write", file);
    bytes += put;
    size -= static_cast<std::size_t>(put);
    offset += put;
  }
}

nlohmann::json manifest_of(const VisionCacheLayout& layout) {
  return {{"fingerprint", layout.fingerprint},
          {"num_frames", layout.num_frames},
          {"tokens", layout.tokens},
          {"hidden", layout.hidden},
          {"dtype", std::string(c10::toString(layout.dtype))},
          {"cameras", layout.cameras}};
}

}  // namespace

std::string tensor_fingerprint(const std::vector<torch::Tensor>& tensors, const std::string& extra) {
  uint64_t hash = 1469598103934665603ULL;
  auto mix = [&](const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  };
  for (const auto& t : tensors) {
    auto cpu = t.detach().to(torch::kCPU).contiguous();
    std::string header = std::string(c10::toString(cpu.scalar_type())) + c10::str(cpu.sizes());
    mix(header.data(), header.size());
    mix(cpu.data_ptr(), static_cast<std::size_t>(cpu.nbytes()));
  }
  mix(extra.data(), extra.size());
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

VisionFeatureCache::VisionFeatureCache(fs::path dir, VisionCacheLayout layout, int64_t max_bytes)
    : dir_(std::move(dir)), layout_(std::move(layout)) {
  if (layout_.num_frames <= 0 || layout_.tokens <= 0 || layout_.hidden <= 0 || layout_.cameras.empty())
    throw util::ConfigError("vision feature cache: needs frames, cameras and a token shape");
  const int64_t bytes = record_bytes(layout_.dtype);
  const double total = static_cast<double>(bytes) * static_cast<double>(layout_.num_frames) *
                       static_cast<double>(layout_.cameras.size());
  if (total > static_cast<double>(max_bytes)) {
    char message[256];
    std::snprintf(message, sizeof message,
                  "vision feature cache: %zu camera(s) x %lld frames x %lld bytes = %.2f GiB exceeds its bound of "
                  "%.2f GiB",
                  layout_.cameras.size(), static_cast<long long>(layout_.num_frames), static_cast<long long>(bytes),
                  total / (1 << 30), static_cast<double>(max_bytes) / (1 << 30));
    throw util::ConfigError(message, "raise policy.vision_cache_max_gib, or set policy.cache_vision_features=false");
  }
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) throw util::IoError("vision feature cache: cannot create " + dir_.string() + ": " + error.message());
  DirLock lock(dir_ / ".lock");
  const auto manifest_file = dir_ / "manifest.json";
  const auto expected = manifest_of(layout_);
  bool reuse = false;
  if (fs::exists(manifest_file, error)) {
    try {
      reuse = nlohmann::json::parse(io::read_json_file(manifest_file, {}).dump()) == expected;
    } catch (const std::exception&) {
      reuse = false;  // unreadable: rebuilt below
    }
  }
  if (!reuse) {
    // Made by other weights, another dataset or another image size: derived data, rebuilt.
    for (const auto& entry : fs::directory_iterator(dir_, error)) {
      auto ext = entry.path().extension();
      if (ext == ".records" || ext == ".present") fs::remove(entry.path(), error);
    }
    io::write_file_atomic(manifest_file, expected.dump(2));
  }
}

VisionFeatureCache::~VisionFeatureCache() {
  for (auto& [camera, files] : files_) {
    if (files.records >= 0) ::close(files.records);
    if (files.present >= 0) ::close(files.present);
  }
}

int64_t VisionFeatureCache::record_bytes(c10::ScalarType dtype) const {
  return layout_.tokens * layout_.hidden * static_cast<int64_t>(c10::elementSize(dtype));
}

fs::path VisionFeatureCache::file_of(const std::string& camera, c10::ScalarType dtype, const char* extension) const {
  return dir_ / (camera + "." + std::string(c10::toString(dtype)) + extension);
}

VisionFeatureCache::CameraFiles& VisionFeatureCache::files_of(const std::string& camera, c10::ScalarType dtype) {
  if (std::find(layout_.cameras.begin(), layout_.cameras.end(), camera) == layout_.cameras.end())
    throw util::ConfigError("vision feature cache: camera '" + camera + "' is not one of the cached cameras");
  auto& files = files_[{camera, dtype}];
  if (files.records < 0) {
    // Opened on first use of this dtype; sizing is idempotent, so ranks may race here.
    files.records = open_sized(file_of(camera, dtype, ".records"), record_bytes(dtype) * layout_.num_frames);
    files.present = open_sized(file_of(camera, dtype, ".present"), layout_.num_frames);
  }
  return files;
}

torch::Tensor VisionFeatureCache::lookup(const std::string& camera, const torch::Tensor& index,
                                         const torch::Device& device, c10::ScalarType dtype, const Compute& compute) {
  auto& files = files_of(camera, dtype);
  const auto records_file = file_of(camera, dtype, ".records"), present_file = file_of(camera, dtype, ".present");
  auto frames = index.to(torch::kCPU, torch::kLong).reshape({-1}).contiguous();
  const int64_t batch = frames.numel();
  const int64_t* frame = frames.data_ptr<int64_t>();
  const int64_t bytes = record_bytes(dtype);
  auto out = torch::empty({batch, layout_.tokens, layout_.hidden}, torch::TensorOptions(dtype));
  std::vector<int64_t> missing;
  for (int64_t b = 0; b < batch; ++b) {
    if (frame[b] < 0 || frame[b] >= layout_.num_frames)
      throw util::DataError("vision feature cache: frame index " + std::to_string(frame[b]) + " is outside 0.." +
                                std::to_string(layout_.num_frames - 1),
                            "the cache was opened for another dataset");
    unsigned char present = 0;
    read_exact(files.present, &present, 1, frame[b], present_file);
    if (present == 1)
      read_exact(files.records, out[b].data_ptr(), static_cast<std::size_t>(bytes), frame[b] * bytes, records_file);
    else
      missing.push_back(b);
  }
  hits_ += batch - static_cast<int64_t>(missing.size());
  misses_ += static_cast<int64_t>(missing.size());
  if (!missing.empty()) {
    auto rows = torch::tensor(missing, torch::kLong);
    auto computed = compute(rows).detach().to(torch::kCPU).contiguous();
    const auto n = static_cast<int64_t>(missing.size());
    if (computed.sizes() != torch::IntArrayRef({n, layout_.tokens, layout_.hidden}) || computed.scalar_type() != dtype)
      throw util::DataError("vision feature cache: computed features " + c10::str(computed.sizes()) + " " +
                            std::string(c10::toString(computed.scalar_type())) + " do not match the cache's (" +
                            std::to_string(layout_.tokens) + ", " + std::to_string(layout_.hidden) + ") " +
                            std::string(c10::toString(dtype)));
    const unsigned char one = 1;
    for (int64_t m = 0; m < n; ++m) {
      const int64_t b = missing[static_cast<std::size_t>(m)];
      out[b].copy_(computed[m]);
      // The record first, then its presence byte: a reader never sees a half-written record as present.
      write_exact(files.records, computed[m].data_ptr(), static_cast<std::size_t>(bytes), frame[b] * bytes,
                  records_file);
      write_exact(files.present, &one, 1, frame[b], present_file);
    }
  }
  return out.to(device);
}

}  // namespace lrhost::policy::smolvla
