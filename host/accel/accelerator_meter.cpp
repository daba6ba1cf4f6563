// The accelerator's logging side: its training meter (what only it knows: ranks, terminal, device,
// the device's peak) and acc:log, which joins the meter's window to a step's metrics and records them.
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <spdlog/spdlog.h>

#include "host/accel/accelerator.hpp"
#include "host/accel/device_peak.hpp"
#include "host/util/error.hpp"
#include "host/util/status_line.hpp"

namespace lrhost::accel {

std::optional<double> Accelerator::peak_flops() const {
  if (config_.peak_tflops) return *config_.peak_tflops * 1e12;
  if (!device_.is_cuda()) return std::nullopt;
  const std::string name = at::cuda::getDeviceProperties(device_.index())->name;
  return known_peak_flops(name, matmul_precision(config_.mixed_precision, at::globalContext().allowTF32CuBLAS()));
}

std::shared_ptr<metrics::TrainingMeter> Accelerator::training_meter(metrics::TrainingMeterOptions options) {
  options.world_size = world_size();
  options.draw_status_line = is_main_process() && util::StatusLine::instance().enabled();
  if (device_.is_cuda()) {
    const int index = device_.index();
    options.synchronize = [index] { torch::cuda::synchronize(index); };
  }
  if (auto peak = peak_flops()) options.peak_flops = *peak;
  if (is_main_process()) {
    // Said once, at the start: a step line without mfu must not look like an oversight.
    if (options.flops_per_sample <= 0)
      spdlog::info("tflops/mfu: this policy type has no FLOP count, so the step line shows neither");
    else if (options.peak_flops <= 0)
      spdlog::info(
          "mfu: the peak FLOP/s of {} is not known (set accelerator.peak_tflops to the device's dense "
          "peak); the step line shows tflops only",
          device_.is_cuda() ? at::cuda::getDeviceProperties(device_.index())->name : std::string("the CPU"));
  }
  return std::make_shared<metrics::TrainingMeter>(std::move(options));
}

std::map<std::string, double> Accelerator::log(int64_t step, std::map<std::string, double> metrics,
                                               metrics::TrainingMeter* meter) {
  if (meter != nullptr)
    for (const auto& [name, value] : meter->take_window()) {
      if (metrics.count(name)) throw util::ConfigError("metric '" + name + "' is also one of the meter's; rename it");
      metrics[name] = value;
    }
  auto reduced = reduce_metrics(metrics);
  if (meter != nullptr && reduced.count("loss")) meter->set_last_loss(reduced.at("loss"));
  if (is_main_process()) metrics_log().record(step, reduced, meter ? meter->progress_text(step) : "");
  return reduced;
}

}  // namespace lrhost::accel
