// The training data loader: C++ worker threads assemble this rank's batches ahead of the training
// loop (no Python, no process per worker), in sampler order, at most `prefetch` batches in flight,
// so memory stays bounded. Camera frames travel as uint8 (4x less than float) and become float
// in [0, 1] after the copy to the device; on CUDA, batches are assembled in pinned memory and copied
// asynchronously. A policy's preprocessor can run inside next(), cut at its device step (BatchStages),
// so that the batch reaches the training loop ready for the policy. A worker's exception is delivered to next() in the
// batch's place, so a bad file becomes a clear error in the recipe, never a hang.
#pragma once
#include <c10/core/Device.h>
#include <torch/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/data/episode_sampler.hpp"
#include "host/data/lerobot_dataset.hpp"
#include "host/data/transforms/image_transforms.hpp"

namespace lrhost::data {

using Batch = std::map<std::string, torch::Tensor>;

// What next() does to each batch around its device copy, on the consumer's thread (so that the
// functions may read state the training loop owns, such as a policy's processors): `before_copy`
// gets the batch as assembled in host memory (cameras still uint8), `after_copy` the batch on the
// device with cameras float in [0, 1]. Unset: the batch passes unchanged.
struct BatchStages {
  std::function<Batch(const Batch&)> before_copy, after_copy;
};

struct LoaderOptions {
  SamplerOptions sampler;
  int num_workers = 2;
  int prefetch = 4;  // batches assembled ahead of the consumer
  c10::Device device = c10::Device(c10::kCPU);
  // Open video files per worker; unset: max(8, the dataset's video streams), so that a mixture's
  // datasets do not evict each other's decoders (a 10-dataset, 2-camera mixture ran at 0.27x of one
  // dataset with 8: docs/benchmarks.md).
  std::optional<std::size_t> video_cache_size;
  std::optional<ImageTransforms> image_transforms;
  BatchStages preprocess;
};

struct LoaderStats {
  int64_t batches = 0;
  double wait_s = 0;           // time next() spent waiting for a batch
  int64_t resident_bytes = 0;  // bytes of batches assembled and not yet taken
  int64_t peak_resident_bytes = 0;
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const FrameSource> dataset, LoaderOptions options,
              SamplerPosition start = SamplerPosition{});
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next batch of this rank (epochs follow each other without end), through the preprocess
  // stages when given. Cameras are float in [0, 1].
  Batch next();
  // Whether next() runs preprocess stages (its batches are ready for the policy).
  bool preprocesses() const { return options_.preprocess.before_copy || options_.preprocess.after_copy; }
  // Position of the next batch next() returns: save it to resume sample-exactly.
  SamplerPosition position() const;
  // Continues from `start` instead (a resumed checkpoint's position): batches assembled or in
  // flight for the old position are dropped. ConfigError when `start` is outside the dataset.
  void seek(SamplerPosition start);
  const EpisodeSampler& sampler() const { return sampler_; }
  // Samples per group (a mixture's datasets) this rank's next() has returned since epoch 0, position 0
  // (a resumed run included: the stream is a function of the seed): counted as batches are assembled,
  // from the sampler's count up to the start position.
  std::vector<int64_t> samples_by_group() const;
  const FrameSource& dataset() const { return *dataset_; }
  LoaderStats stats() const;

 private:
  struct Job {
    int64_t sequence = 0;
    int64_t epoch = 0;
    std::vector<int64_t> rows;
    SamplerPosition after;
  };
  struct Ready {
    Batch batch;
    std::exception_ptr error;
    int64_t bytes = 0;
    SamplerPosition after;
    std::vector<int64_t> group_counts;  // the batch's samples per group
  };

  void worker_main();
  bool claim(Job& job);  // next job in sequence order; false when stopping
  void plan_epoch();     // appends the next epoch's (rest of) batches to the plan; needs the lock
  Batch assemble(const Job& job, ReadContext& context) const;
  void check_position(const SamplerPosition& start) const;

  std::shared_ptr<const FrameSource> dataset_;
  LoaderOptions options_;
  EpisodeSampler sampler_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_, batch_ready_;
  std::deque<Job> plan_;
  SamplerPosition plan_next_;  // where planning continues
  int64_t next_sequence_ = 0;  // next job number to hand out
  int64_t consumed_ = 0;       // jobs handed to next()
  std::map<int64_t, Ready> ready_;
  SamplerPosition position_;
  bool stopping_ = false;
  LoaderStats stats_;
  std::vector<int64_t> samples_by_group_;  // handed out by next(), from epoch 0
  std::vector<std::thread> workers_;
};

}  // namespace lrhost::data
