// Kineto profiler around a function, saved as a Chrome trace.
#include "host/util/profiler_trace.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include "host/util/error.hpp"

namespace lrhost::util {

void write_profiler_trace(const std::string& path, const std::function<void()>& body) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (torch::cuda::is_available()) activities.insert(ActivityType::CUDA);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  try {
    body();
  } catch (...) {
    profiler::disableProfiler();
    throw;
  }
  auto result = profiler::disableProfiler();
  if (!result) throw Error("profiler: no result to save to " + path);
  result->save(path);
}

}  // namespace lrhost::util
