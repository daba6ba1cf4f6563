// The frozen vision tower computed once (lrhost's addition to SmolVLA): with the vision encoder
// frozen and no image augmentation, the SigLIP + connector output of a given camera frame never
// changes, and it is ~88% of a training forward's FLOPs (reference smolvla.md §0.8). This cache keeps
// that output per (camera, dataset frame index) on disk:
//  - one file per (camera, feature dtype) of num_frames fixed-size records (sparse: only written
//    records take disk space) and a byte per frame saying whether its record is there; the dtype is
//    what the tower produces in the run (its weights' dtype, or the autocast dtype under mixed
//    precision), so runs with another precision never read each other's features;
//  - shared by every rank on the host (records are written with pwrite before their presence byte, and
//    a rank that finds a frame missing computes and writes it; two ranks writing the same frame write
//    the same values), reused across epochs and resumes;
//  - bounded: opening refuses a cache larger than max_bytes, naming the size it would need;
//  - tied to what produced it: a manifest holds a fingerprint of the vision and connector weights, the
//    image size and the frame count; a cache made by other weights or another dataset is discarded
//    and rebuilt (it is derived data).
// Values are exactly what the tower produced for the frame (stored in its output dtype).
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lrhost::policy::smolvla {

struct VisionCacheLayout {
  int64_t num_frames = 0;               // dataset frames (records are indexed by the global frame index)
  int64_t tokens = 0;                   // image tokens per frame
  int64_t hidden = 0;                   // their width
  c10::ScalarType dtype = c10::kFloat;  // the tower's weights (bounds the size; part of the manifest)
  std::vector<std::string> cameras;
  std::string fingerprint;  // weights + preprocessing + dataset; another value discards the cache
};

class VisionFeatureCache {
 public:
  // Opens (or creates) the cache under `dir`. Throws util::ConfigError when it would exceed
  // `max_bytes` and util::IoError when the folder or files cannot be used.
  VisionFeatureCache(std::filesystem::path dir, VisionCacheLayout layout, int64_t max_bytes);
  ~VisionFeatureCache();
  VisionFeatureCache(const VisionFeatureCache&) = delete;
  VisionFeatureCache& operator=(const VisionFeatureCache&) = delete;

  // Features (B, tokens, hidden) in `dtype` of `camera` for the frames `index` (B,), on `device`.
  // Frames not yet cached are computed by `compute(rows)` (rows: positions in the batch, int64; the
  // result must have `dtype`) and stored.
  using Compute = std::function<torch::Tensor(const torch::Tensor& rows)>;
  torch::Tensor lookup(const std::string& camera, const torch::Tensor& index, const torch::Device& device,
                       c10::ScalarType dtype, const Compute& compute);

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t record_bytes(c10::ScalarType dtype) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  struct CameraFiles {
    int records = -1, present = -1;
  };
  CameraFiles& files_of(const std::string& camera, c10::ScalarType dtype);
  std::filesystem::path file_of(const std::string& camera, c10::ScalarType dtype, const char* extension) const;

  std::filesystem::path dir_;
  VisionCacheLayout layout_;
  std::map<std::pair<std::string, c10::ScalarType>, CameraFiles> files_;
  int64_t hits_ = 0, misses_ = 0;
};

// A fingerprint of tensors' bytes (FNV-1a over shapes, dtypes and values) plus `extra` text.
std::string tensor_fingerprint(const std::vector<torch::Tensor>& tensors, const std::string& extra);

}  // namespace lrhost::policy::smolvla
