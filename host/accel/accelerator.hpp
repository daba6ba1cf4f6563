// The Accelerator: what a training loop needs to run the same recipe on 1 or N processes. It owns
// the device and the process-wide Comm, prepares a policy and its optimizer (rank-0 broadcast of
// parameters and buffers, then DDP gradient reduction or FSDP sharding, autocast), runs backward with gradient
// accumulation and fp16 loss scaling, clips by the global gradient norm, refuses optimizer steps
// whose loss or gradient norm is not finite (host/accel/nonfinite_guard.hpp: stop, or skip a bounded
// number), reduces metrics across ranks, and refuses collectives inside main-process-only blocks
// instead of deadlocking.
#pragma once
#include <torch/torch.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "host/accel/cuda_graph_runner.hpp"
#include "host/accel/grad_scaler.hpp"
#include "host/accel/mixed_precision.hpp"
#include "host/accel/nonfinite_guard.hpp"
#include "host/dist/bucket_plan.hpp"
#include "host/dist/comm.hpp"
#include "host/dist/ddp_reducer.hpp"
#include "host/dist/fsdp/fsdp_engine.hpp"
#include "host/dist/rank_env.hpp"
#include "host/metrics/eval_progress.hpp"
#include "host/metrics/metrics_log.hpp"
#include "host/metrics/training_meter.hpp"
#include "host/nn/autocast.hpp"
#include "host/optim/optimizer.hpp"
#include "host/optim/scheduler.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::accel {

struct AcceleratorConfig {
  MixedPrecision mixed_precision = MixedPrecision::no;
  int64_t gradient_accumulation_steps = 1;
  dist::BucketCaps buckets;
  int64_t batch_size = 0;  // per-rank micro-batch (0: unknown), for the printed batch semantics
  // parallelism: dp_shard = 1 is DDP; anything else is FSDP with shard groups of dp_shard ranks,
  // replicated dp_replicate times (hybrid when both > 1). -1 in either means "every rank the other
  // leaves"; the Accelerator resolves it against the rank count.
  int64_t dp_shard = 1;
  int64_t dp_replicate = 1;
  bool reshard_after_forward = true;      // accelerator.fsdp: ZeRO-3 (true) or ZeRO-2 (false)
  std::vector<std::string> wrap_modules;  // accelerator.fsdp.wrap_modules; empty: the policy's types
  // A step whose loss or gradient norm is not finite: "error" stops the run, "skip" drops the step
  // (no update) up to max_skipped_steps times in a run, then stops the same way.
  NonfinitePolicy nonfinite = NonfinitePolicy::error;
  int64_t max_skipped_steps = 10;
  // CUDA only. tf32: TF32 tensor cores for fp32 matmuls and convolutions (true, as lerobot-train
  // sets them), neither (false: full fp32), or LibTorch's defaults (unset: convolutions only).
  // cudnn_benchmark: cuDNN times its algorithms per shape and keeps the fastest (lerobot-train: on).
  std::optional<bool> tf32;
  bool cudnn_benchmark = false;
  // The device's dense peak in TFLOPS for the step line's mfu; unset (or 0 in the config): the known
  // GPUs' table (device_peak.hpp), none on the CPU.
  std::optional<double> peak_tflops;
  // Capture acc:train_step in a CUDA graph where cuda_graph_plan.hpp allows it; otherwise warn
  // once with the reason and run eager steps.
  bool cuda_graph = false;

  bool fsdp_requested = false;  // dp_shard was not 1 in the config (-1 counts even when it resolves to 1)

  bool fsdp() const { return fsdp_requested; }
  // dp_shard / dp_replicate with -1 filled in for `world_size` ranks (DDP: dp_shard 1, dp_replicate
  // = world_size); ConfigError when their product is not the rank count.
  AcceleratorConfig resolved_for(int64_t world_size) const;
  // "single", "ddp", "fsdp zero-3 (dp_shard 2 x dp_replicate 1)", "fsdp zero-2 hybrid (...)" for a
  // resolved config.
  std::string strategy_name(int64_t world_size) const;

  // From a resolved recipe config: batch_size, accelerator = {mixed_precision,
  // gradient_accumulation_steps, nonfinite, max_skipped_steps, ddp = {bucket_cap_mb, first_bucket_mb}, fsdp =
  // {reshard_after_forward, wrap_modules}, tf32, cudnn_benchmark, cuda_graph}, parallelism =
  // {dp_shard, dp_replicate}.
  static AcceleratorConfig from_recipe_config(const nlohmann::json& config);
};

// Persistent per-rank training memory: what the plan of `lrhost show` predicts.
struct MemoryStats {
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_bytes = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryStats, parameter_bytes, gradient_bytes, optimizer_bytes)

class Accelerator {
 public:
  Accelerator(const dist::RankEnv& env, AcceleratorConfig config);
  ~Accelerator();

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  bool is_main_process() const { return env_.rank == 0; }
  const torch::Device& device() const { return device_; }
  const AcceleratorConfig& config() const { return config_; }
  int64_t effective_batch() const { return config_.batch_size * world_size() * config_.gradient_accumulation_steps; }
  // "effective batch 64 = batch_size 8 x 4 data-parallel ranks x 2 accumulation steps"
  std::string batch_semantics() const;
  dist::Comm& comm() { return *comm_; }
  // "ddp", "fsdp zero-3" / "fsdp zero-2" (with "hybrid" when dp_replicate > 1); "single" for one rank.
  std::string strategy() const;
  // Whether the policy's parameters are (or, before prepare, will be) sharded by FSDP: decided by the
  // config (dp_shard != 1, even when -1 resolves to one rank), so known before prepare.
  bool is_sharded() const { return config_.fsdp(); }
  // Shard group size after resolving dp_shard = -1 (1 under DDP).
  int64_t shard_size() const { return shard_size_; }
  dist::fsdp::FsdpEngine* fsdp() { return fsdp_.get(); }
  MemoryStats memory_stats(const optim::Optimizer* optimizer) const;
  // The device allocator's figures for this rank's accelerator device (CUDA): bytes allocated now,
  // peak allocated since the last reset, reserved; nullopt on the CPU.
  struct DeviceMemory {
    int64_t allocated = 0, peak = 0, reserved = 0;
    NLOHMANN_DEFINE_TYPE_INTRUSIVE(DeviceMemory, allocated, peak, reserved)
  };
  std::optional<DeviceMemory> device_memory() const;
  void reset_peak_memory() const;

  void prepare(policy::Policy& policy, optim::Optimizer* optimizer);
  // Scales for accumulation (and fp16), runs backward; gradients are synchronised across ranks only
  // on the last micro-step of each accumulation cycle.
  void backward(const torch::Tensor& loss);
  // Whether the last backward ended an accumulation cycle (optimizer steps happen only then).
  bool sync_gradients() const;
  // Global gradient-norm clipping of the prepared parameters; nullopt on accumulation micro-steps.
  std::optional<double> clip_grad_norm(double max_norm);

  // One whole training step, what a recipe's loop body does between getting a batch and logging:
  // policy forward, backward, clip_grad_norm(max_norm) (max_norm <= 0: no clipping), optimizer
  // step, zero_grad. With accelerator.cuda_graph, on a GPU and where decide_cuda_graph allows, the
  // step is captured once (after CudaGraphRunner::kWarmupSteps eager steps) and replayed; a batch of
  // another signature runs eagerly, with a warning.
  //
  // StepOptions make it the whole loop body, so that captured and eager steps share one code path:
  // the scheduler steps after the optimizer; a meter gets the step's phases marked (eager: "forward",
  // "backward", "optimizer"; a step of the CUDA graph, warm-up and capture included: "train_step",
  // "optimizer", since its parts cannot be told apart); measure_memory takes memory_stats after the
  // optimizer step and before zero_grad, when gradients, parameters and optimizer state are all held
  // (what `lrhost show` plans).
  struct StepOptions {
    double max_norm = 0;                      // <= 0: no clipping
    metrics::TrainingMeter* meter = nullptr;  // or none: nothing marked
    optim::LrScheduler* scheduler = nullptr;  // or none
    bool measure_memory = false;
  };
  struct StepResult {
    torch::Tensor loss;
    std::map<std::string, torch::Tensor> parts;
    std::optional<double> grad_norm;    // nullopt without clipping or on accumulation micro-steps
    std::optional<MemoryStats> memory;  // with StepOptions::measure_memory
  };
  StepResult train_step(policy::Policy& policy, optim::Optimizer& optimizer, const policy::Batch& batch,
                        const StepOptions& options);
  StepResult train_step(policy::Policy& policy, optim::Optimizer& optimizer, const policy::Batch& batch,
                        double max_norm) {
    StepOptions options;
    options.max_norm = max_norm;
    return train_step(policy, optimizer, batch, options);
  }
  // "off" (not requested), "warming up", "captured", or "eager: <why capture was refused or failed>".
  std::string cuda_graph_status() const;

  std::optional<nn::AutocastSpec> autocast_spec() const;
  // fp16 only: current loss scale and steps skipped for non-finite gradients (normal loss scaling,
  // not counted as divergence).
  std::optional<double> loss_scale() const;
  int64_t skipped_steps() const;
  // Steps dropped by the divergence guard (accelerator.nonfinite = "skip").
  int64_t skipped_nonfinite_steps() const;
  // What the divergence guard's error names: the number of the next optimizer step (call between
  // steps) and the last checkpoint saved from finite state.
  void set_next_step(int64_t step);
  void set_last_checkpoint(std::string dir);
  // A recipe's acc:guard_context table {next_step =, checkpoint =}: either key may be left out; both
  // are checked (ConfigErrors naming the key) before either is set.
  void set_guard_context(const nlohmann::json& options);
  std::optional<dist::DdpStats> ddp_stats() const;

  // Metrics reduced across ranks, each by its name's rule (host/metrics/metric_reduction.hpp: times
  // and memory the max, rates and counts the sum, the rest the mean). All ranks must pass the same keys.
  std::map<std::string, double> reduce_metrics(const std::map<std::string, double>& metrics);

  // Main-process-only blocks: collectives inside one raise instead of deadlocking.
  void enter_main_only() { ++main_only_depth_; }
  void leave_main_only() { --main_only_depth_; }

  void wait_for_everyone() { comm_->barrier(); }
  // Preemption (host/util/save_on_signal.hpp), what acc:stop_requested() asks after each step: the
  // first call arms the recording handlers on $LRHOST_SAVE_ON_SIGNAL's signals (util/stop_request.hpp;
  // lazily, so a process that never asks keeps the default: a signal ends it), then agrees on this
  // rank's recorded signal as below.
  int stop_requested();
  // Collective, at a step boundary: `local_signal` is
  // the stop signal this rank recorded (util/stop_request.hpp) or 0; returns 0 while no rank has
  // one, else that signal (the largest number when ranks got different ones), the same on every
  // rank, so all stop after the same step. Costs one all-reduce of one number and its read-back per
  // call; once a stop is agreed it is remembered and no longer costs anything.
  int stop_requested(int local_signal);
  // Where acc:log's records go on the main process (the log line and the recipe's metric sinks).
  metrics::MetricsLog& metrics_log() { return metrics_log_; }
  // A training meter for this rank's loop (the recipe gives total_steps, first_step,
  // samples_per_step and flops_per_sample): the job's rank count, the status line on the main
  // process's terminal, the device synchronisation of each mark and the device's peak FLOP/s
  // (accelerator.peak_tflops, else device_peak.hpp) come from the accelerator (accelerator_metrics.cpp).
  std::shared_ptr<metrics::TrainingMeter> training_meter(metrics::TrainingMeterOptions options);
  // Progress of a closed-loop evaluation of `requested.episodes` dealt to the ranks: the main process
  // draws the status line on a terminal and, off one, logs each tenth when `requested.log_lines`.
  std::shared_ptr<metrics::EvalProgress> eval_progress(metrics::EvalProgressOptions requested);
  // acc:log: `metrics` with the meter's window joined in (its phase timings, step_s, samples_per_s,
  // tflops, mfu; ConfigError when a metric repeats one of them), reduced across ranks (collective:
  // every rank calls it; reduce_metrics' rules), the loss put on the meter's status line, and on the
  // main process recorded in the log line and every metric sink. Returns the reduced metrics.
  std::map<std::string, double> log(int64_t step, std::map<std::string, double> metrics,
                                    metrics::TrainingMeter* meter = nullptr);
  // The peak the step line's mfu divides by: FLOP/s, or nullopt (CPU, or a GPU the table lacks).
  std::optional<double> peak_flops() const;

 private:
  struct StepState;  // shared with the optimizer's step hooks
  void broadcast_module_state(policy::Policy& policy);
  // `meter`: the eager step's own phases (null inside a graph step, which marks one phase for all).
  StepResult eager_step(policy::Policy& policy, optim::Optimizer& optimizer, const policy::Batch& batch,
                        const StepOptions& options, metrics::TrainingMeter* meter);
  StepResult graph_step(policy::Policy& policy, optim::Optimizer& optimizer, const policy::Batch& batch,
                        const StepOptions& options);
  // At the first train_step: decide_cuda_graph on this run's facts, and the runner it decides.
  void start_graph_runner(policy::Policy& policy, optim::Optimizer& optimizer, double max_norm);
  // After a replay: the divergence guard's check, on the loss and gradient norm the graph computed.
  StepResult finish_replay(StepOutputs outputs);

  dist::RankEnv env_;
  AcceleratorConfig config_;
  torch::Device device_;
  std::shared_ptr<dist::Comm> comm_;
  int agreed_stop_signal_ = 0;
  std::shared_ptr<StepState> state_;
  std::unique_ptr<dist::DdpReducer> reducer_;
  std::unique_ptr<dist::fsdp::FsdpEngine> fsdp_;
  int64_t shard_size_ = 1;
  std::vector<torch::Tensor> prepared_params_;
  int main_only_depth_ = 0;
  int64_t micro_step_ = 0;
  metrics::MetricsLog metrics_log_;
  // accelerator.cuda_graph: decided at the first train_step.
  std::unique_ptr<CudaGraphRunner> graph_;
};

}  // namespace lrhost::accel
