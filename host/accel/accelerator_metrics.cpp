// The accelerator's metric side: its training meter (what only it knows: ranks, terminal, device, the
// device's peak), acc:log (the meter's window joined to a step's metrics, reduced, recorded), the
// metric reduction across ranks and the agreement on a stop request.
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <spdlog/spdlog.h>

#include "host/accel/accelerator.hpp"
#include "host/accel/device_peak.hpp"
#include "host/metrics/metric_reduction.hpp"
#include "host/util/error.hpp"
#include "host/util/save_on_signal.hpp"
#include "host/util/status_line.hpp"
#include "host/util/stop_request.hpp"

namespace lrhost::accel {

std::optional<double> Accelerator::peak_flops() const {
  if (config_.peak_tflops) return *config_.peak_tflops * 1e12;
  if (!device_.is_cuda()) return std::nullopt;
  const std::string name = at::cuda::getDeviceProperties(device_.index())->name;
  return known_peak_flops(name, matmul_precision(config_.mixed_precision, at::globalContext().allowTF32CuBLAS()));
}

std::shared_ptr<metrics::EvalProgress> Accelerator::eval_progress(metrics::EvalProgressOptions requested) {
  requested.rank = rank();
  requested.world_size = world_size();
  const bool terminal = util::StatusLine::instance().enabled();
  requested.draw_status_line = is_main_process() && terminal;
  requested.log_lines = is_main_process() && !terminal && requested.log_lines;
  return std::make_shared<metrics::EvalProgress>(requested);
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

int Accelerator::stop_requested() {
  util::arm_stop_request(util::save_signals_from_environment());
  return stop_requested(util::requested_stop_signal());
}

int Accelerator::stop_requested(int local) {
  if (agreed_stop_signal_ != 0) return agreed_stop_signal_;
  if (world_size() == 1) return agreed_stop_signal_ = local;
  // A signal reaches the ranks at different moments (the launcher forwards it one rank after the
  // other; a scheduler may signal one pod only), so each rank's own flag may say "stop" one step
  // earlier than its peers'. The max over ranks is the same everywhere: every rank stops after
  // the same step. On the accelerator's device, the only kind of tensor its comm reduces.
  auto flag =
      torch::tensor({static_cast<double>(local)}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  comm_->all_reduce(flag, dist::ReduceOp::max);
  return agreed_stop_signal_ = static_cast<int>(flag.cpu().item<double>());
}

std::map<std::string, double> Accelerator::reduce_metrics(const std::map<std::string, double>& metrics) {
  if (world_size() == 1) return metrics;
  // The key set must agree across ranks, or the reductions below would mix values up: compare a
  // hash of the keys (max and min of it agree only if every rank has the same one).
  std::size_t hash = 0;
  for (const auto& [key, value] : metrics) hash = hash * 1000003u ^ std::hash<std::string>{}(key);
  auto options = torch::TensorOptions().dtype(torch::kFloat64).device(device_);
  auto check =
      torch::tensor({static_cast<double>(hash % 1000000007u), -static_cast<double>(hash % 1000000007u)}, options);
  comm_->all_reduce(check, dist::ReduceOp::max);
  auto values = check.cpu();
  if (values[0].item<double>() != -values[1].item<double>())
    throw util::ConfigError(
        "acc:log / reduce_metrics: ranks passed different metric names; every rank must pass the same keys");
  // Two collectives whatever the number of metrics: sums (means are sums divided afterwards) and maxes.
  std::vector<double> sums, maxes;
  for (const auto& [key, value] : metrics)
    (metrics::reduction_for(key) == metrics::Reduction::max ? maxes : sums).push_back(value);
  auto sum_tensor = torch::tensor(sums, options);
  auto max_tensor = torch::tensor(maxes, options);
  if (!sums.empty()) comm_->all_reduce(sum_tensor, dist::ReduceOp::sum);
  if (!maxes.empty()) comm_->all_reduce(max_tensor, dist::ReduceOp::max);
  auto sums_cpu = sum_tensor.cpu();
  auto maxes_cpu = max_tensor.cpu();
  std::map<std::string, double> reduced;
  int64_t s = 0, m = 0;
  for (const auto& [key, value] : metrics) {
    switch (metrics::reduction_for(key)) {
      case metrics::Reduction::max:
        reduced[key] = maxes_cpu[m++].item<double>();
        break;
      case metrics::Reduction::sum:
        reduced[key] = sums_cpu[s++].item<double>();
        break;
      case metrics::Reduction::mean:
        reduced[key] = sums_cpu[s++].item<double>() / world_size();
        break;
    }
  }
  return reduced;
}

}  // namespace lrhost::accel
