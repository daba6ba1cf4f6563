// Worker threads, ordered delivery and device transfer of batches; see batch_loader.hpp.
#include "host/data/batch_loader.hpp"

#include <chrono>
#include <set>

#include "host/data/seed_sequence.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {

BatchLoader::BatchLoader(std::shared_ptr<const FrameSource> dataset, LoaderOptions options, SamplerPosition start)
    : dataset_(std::move(dataset)), options_(std::move(options)), sampler_([&] {
        std::vector<std::pair<int64_t, int64_t>> ranges;
        int64_t row = 0;
        for (int64_t episode : dataset_->episode_indices()) {
          int64_t length = dataset_->meta().episode(episode).length;
          ranges.emplace_back(row, row + length);
          row += length;
        }
        return EpisodeSampler(ranges, options_.sampler, dataset_->sampling_groups());
      }()) {
  if (options_.num_workers < 1)
    throw util::ConfigError("num_workers must be >= 1, got " + std::to_string(options_.num_workers));
  if (options_.prefetch < 1) throw util::ConfigError("prefetch must be >= 1, got " + std::to_string(options_.prefetch));
  check_position(start);
  plan_next_ = start;
  position_ = start;
  if (sampler_.grouped()) samples_by_group_ = sampler_.group_counts_until(start);
  for (int worker = 0; worker < options_.num_workers; ++worker) workers_.emplace_back([this] { worker_main(); });
}

void BatchLoader::check_position(const SamplerPosition& start) const {
  if (start.epoch < 0 || start.start_index < 0 || start.start_index > sampler_.num_samples())
    throw util::ConfigError("loader position (epoch " + std::to_string(start.epoch) + ", start_index " +
                            std::to_string(start.start_index) + ") is outside the dataset's " +
                            std::to_string(sampler_.num_samples()) + " samples");
}

void BatchLoader::seek(SamplerPosition start) {
  check_position(start);
  {
    std::lock_guard lock(mutex_);
    plan_.clear();
    for (const auto& [sequence, ready] : ready_) stats_.resident_bytes -= ready.bytes;
    ready_.clear();
    // Jobs handed out so far (some still being assembled) all have sequence numbers below this;
    // worker_main drops them when they finish, and next() waits for the first new one.
    consumed_ = next_sequence_;
    plan_next_ = start;
    position_ = start;
    if (sampler_.grouped()) samples_by_group_ = sampler_.group_counts_until(start);
  }
  work_ready_.notify_all();
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void BatchLoader::plan_epoch() {
  SamplerPosition at = plan_next_;
  auto batches = sampler_.rank_batches(at.epoch, at.start_index);
  SamplerPosition after = at;
  for (auto& rows : batches) {
    after = sampler_.advance(after, 1);
    plan_.push_back(Job{0, at.epoch, std::move(rows), after});
  }
  // Every epoch hands each rank at least one batch (even_batches), but guard against a resumed
  // position at the very end of an epoch, which has none left.
  plan_next_ = {at.epoch + 1, 0};
  if (!plan_.empty()) plan_.back().after = plan_next_;
}

bool BatchLoader::claim(Job& job) {
  std::unique_lock lock(mutex_);
  work_ready_.wait(lock, [&] { return stopping_ || next_sequence_ - consumed_ < options_.prefetch; });
  if (stopping_) return false;
  while (plan_.empty()) plan_epoch();
  job = std::move(plan_.front());
  plan_.pop_front();
  job.sequence = next_sequence_++;
  return true;
}

Batch BatchLoader::assemble(const Job& job, ReadContext& context) const {
  std::map<std::string, std::vector<torch::Tensor>> columns;
  const auto& info = dataset_->meta().info;
  for (int64_t row : job.rows) {
    Sample sample = dataset_->get(row, context);
    if (options_.image_transforms && options_.image_transforms->enabled()) {
      // Seeded by (seed, epoch, row): the same sample gets the same augmentation whatever the
      // number of workers or the order they run in.
      auto generator = at::detail::createCPUGenerator(
          seed_sequence_uint64({options_.sampler.seed, static_cast<uint64_t>(job.epoch), static_cast<uint64_t>(row)}));
      for (const std::string& key : info.camera_keys()) {
        if (!sample.count(key)) continue;
        torch::Tensor frames = sample.at(key).to(torch::kFloat).div_(255.0);
        sample[key] = (*options_.image_transforms)(frames, generator);
      }
    }
    for (auto& [key, value] : sample) columns[key].push_back(std::move(value));
  }
  const bool pin = options_.device.is_cuda();
  Batch batch;
  for (auto& [key, values] : columns) {
    std::vector<int64_t> shape = values.front().sizes().vec();
    shape.insert(shape.begin(), static_cast<int64_t>(values.size()));
    torch::Tensor out = torch::empty(shape, values.front().options().pinned_memory(pin));
    torch::stack_out(out, values);
    batch[key] = out;
  }
  return batch;
}

void BatchLoader::worker_main() {
  ReadContext context(options_.video_cache_size.value_or(std::max<std::size_t>(8, dataset_->video_streams())));
  Job job;
  while (claim(job)) {
    Ready ready;
    ready.after = job.after;
    if (sampler_.grouped()) {
      ready.group_counts.assign(sampler_.num_groups(), 0);
      for (int64_t row : job.rows) ++ready.group_counts[sampler_.group_of_row(row)];
    }
    try {
      ready.batch = assemble(job, context);
      for (const auto& [key, tensor] : ready.batch) ready.bytes += static_cast<int64_t>(tensor.nbytes());
    } catch (...) {
      ready.error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (job.sequence < consumed_) continue;  // assembled for a position seek() abandoned
      stats_.resident_bytes += ready.bytes;
      stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, stats_.resident_bytes);
      ready_.emplace(job.sequence, std::move(ready));
    }
    batch_ready_.notify_all();
  }
}

Batch BatchLoader::next() {
  Ready ready;
  {
    std::unique_lock lock(mutex_);
    auto started = std::chrono::steady_clock::now();
    batch_ready_.wait(lock, [&] { return ready_.count(consumed_) > 0; });
    stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    auto found = ready_.find(consumed_);
    ready = std::move(found->second);
    ready_.erase(found);
    ++consumed_;
    stats_.resident_bytes -= ready.bytes;
    if (!ready.error) {
      ++stats_.batches;
      position_ = ready.after;
      for (std::size_t g = 0; g < ready.group_counts.size(); ++g) samples_by_group_[g] += ready.group_counts[g];
    }
  }
  work_ready_.notify_all();
  if (ready.error) {
    try {
      std::rethrow_exception(ready.error);
    } catch (const util::Error& error) {
      throw util::DataError("data loader: " + std::string(error.what()), error.hint());
    } catch (const std::exception& error) {
      throw util::DataError(std::string("data loader: ") + error.what());
    }
  }
  // The uint8 camera frames, known by tensor rather than key: a before_copy stage may rename keys.
  // (The addresses stay unambiguous: the assembled batch keeps every frame alive while the stage
  // allocates its output, so a new tensor never takes a frame's address.)
  std::set<const c10::TensorImpl*> frames;
  const auto& info = dataset_->meta().info;
  for (const auto& [key, tensor] : ready.batch) {
    const FeatureSpec* feature = info.find_feature(key);
    if (feature && feature->is_camera() && tensor.scalar_type() == torch::kByte)
      frames.insert(tensor.unsafeGetTensorImpl());
  }
  if (options_.preprocess.before_copy) ready.batch = options_.preprocess.before_copy(ready.batch);
  for (auto& [key, tensor] : ready.batch) {
    torch::Tensor moved = tensor.to(options_.device, /*non_blocking=*/true);
    if (frames.count(tensor.unsafeGetTensorImpl())) moved = moved.to(torch::kFloat).div_(255.0);
    tensor = moved;
  }
  if (options_.preprocess.after_copy) return options_.preprocess.after_copy(ready.batch);
  return std::move(ready.batch);
}

SamplerPosition BatchLoader::position() const {
  std::lock_guard lock(mutex_);
  return position_;
}

std::vector<int64_t> BatchLoader::samples_by_group() const {
  if (!sampler_.grouped())
    throw util::ConfigError(
        "samples_by_group: the loader's dataset is not a mixture (one dataset: its samples are "
        "the batches times batch_size)");
  std::lock_guard lock(mutex_);
  return samples_by_group_;
}

LoaderStats BatchLoader::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace lrhost::data
