// Accelerator: device choice, prepare (broadcast + DDP/FSDP + autocast), backward with accumulation
// and loss scaling, global clipping, the train step (eager, or captured and replayed as a CUDA graph
// with its divergence guard). The config is read in accelerator_config.cpp; the meter, acc:log, the
// metric reduction and the stop agreement are in accelerator_metrics.cpp.
#include "host/accel/accelerator.hpp"

#include <c10/core/CachingDeviceAllocator.h>
#include <torch/csrc/utils/tensor_flatten.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "host/accel/precision_report.hpp"
#include "host/config/config_reader.hpp"
#include "host/optim/grad_clip.hpp"
#include "host/util/error.hpp"

namespace lrhost::accel {

struct Accelerator::StepState {
  StepState(const AcceleratorConfig& config, const torch::Device& device_in)
      : guard(config.nonfinite, config.max_skipped_steps), device(device_in) {}

  bool sync = true;       // last backward ended an accumulation cycle
  bool unscaled = false;  // fp16 gradients already divided by the scale this cycle
  GradScaler::Check fp16_check = GradScaler::Check::clean;
  std::optional<double> grad_norm;  // the cycle's global gradient norm, once clip_grad_norm computed it
  std::optional<GradScaler> scaler;
  NonfiniteGuard guard;
  torch::Device device;
  std::vector<torch::Tensor> params;
  std::shared_ptr<dist::Comm> comm;
  bool sharded = false;  // FSDP: each rank holds a slice of the gradients ...
  int64_t replicas = 1;  // ... and this many ranks hold the same slice
  bool main_process = true;

  void unscale_once() {
    if (!scaler || unscaled) return;
    fp16_check = scaler->unscale(params, *comm, guard.local_loss_flag());
    unscaled = true;
  }

  // The global gradient norm when clip_grad_norm did not compute it. DDP (and one process) hold the
  // same averaged gradients on every rank, so the local norm is the global one and no collective
  // runs; FSDP sums squared shard norms over every rank (one one-element all-reduce).
  double gradient_norm() const {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (const auto& p : params)
      if (p.grad().defined()) grads.push_back(p.grad());
    auto sum_sq = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
    if (!grads.empty())
      sum_sq += torch::stack(at::_foreach_norm(grads, 2, torch::kFloat32)).to(torch::kFloat64).pow(2).sum();
    if (sharded) {
      comm->all_reduce(sum_sq, dist::ReduceOp::sum);
      sum_sq /= static_cast<double>(replicas);
    }
    return sum_sq.sqrt().item<double>();
  }

  // This cycle's verdict, the same on every rank: nullopt when the optimizer may step. fp16: a
  // non-finite loss anywhere (folded into the scaler's all-reduce); overflowing gradients are the
  // scaler's normal business. Otherwise: the global gradient norm, which a non-finite loss on any
  // rank has made NaN through the gradient reduction.
  std::optional<Divergence> check() {
    if (scaler) {
      unscale_once();
      if (fp16_check != GradScaler::Check::loss_not_finite) return std::nullopt;
      return guard.diagnose(*comm, device, std::numeric_limits<double>::quiet_NaN());
    }
    double norm = grad_norm ? *grad_norm : gradient_norm();
    if (std::isfinite(norm)) return std::nullopt;
    return guard.diagnose(*comm, device, norm);
  }
};

namespace {

torch::Device choose_device(const dist::RankEnv& env) {
  bool cuda = env.device == "cuda" || (env.device == "auto" && torch::cuda::is_available());
  if (!cuda) return torch::Device(torch::kCPU);
  auto count = static_cast<int>(torch::cuda::device_count());
  if (count == 0) throw util::ConfigError("the cuda device was requested but no GPU is available", "use --device cpu");
  // Gloo can share one GPU between ranks (useful for tests); NCCL needs one GPU per rank.
  if (env.cuda_backend == "gloo")
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % count));
  if (env.local_rank >= count)
    throw util::ConfigError("local rank " + std::to_string(env.local_rank) + " needs GPU " +
                                std::to_string(env.local_rank) + " but this machine has " + std::to_string(count),
                            "start at most " + std::to_string(count) + " ranks per node with --gpus");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
}

}  // namespace

Accelerator::Accelerator(const dist::RankEnv& env, AcceleratorConfig config)
    : env_(env),
      config_(std::move(config)),
      device_(choose_device(env)),
      state_(std::make_shared<StepState>(config_, device_)) {
  comm_ = dist::process_comm(env_, device_);
  state_->comm = comm_;
  state_->main_process = is_main_process();
  comm_->set_collective_guard(this, [this](const char* name) {
    if (main_only_depth_ > 0)
      throw util::Error(std::string("collective '") + name +
                            "' called inside a main-process-only block: the other ranks never run that block, so "
                            "they would never join it and the job would hang",
                        "move the collective out of acc:on_main(...)");
  });
  if (config_.mixed_precision == MixedPrecision::fp16) state_->scaler.emplace();
  if (device_.is_cuda()) {
    // Process-wide switches, as lerobot-train sets them through torch.backends.
    if (config_.tf32) {
      at::globalContext().setAllowTF32CuBLAS(*config_.tf32);
      at::globalContext().setAllowTF32CuDNN(*config_.tf32);
    }
    at::globalContext().setBenchmarkCuDNN(config_.cudnn_benchmark);
  }
  config_ = config_.resolved_for(world_size());
  shard_size_ = config_.fsdp_requested ? config_.dp_shard : 1;
}

std::optional<Accelerator::DeviceMemory> Accelerator::device_memory() const {
  if (device_.is_cpu()) return std::nullopt;
  auto stats = c10::getDeviceAllocator(device_.type())->getDeviceStats(device_.index());
  constexpr auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return DeviceMemory{stats.allocated_bytes[all].current, stats.allocated_bytes[all].peak,
                      stats.reserved_bytes[all].current};
}

void Accelerator::reset_peak_memory() const {
  if (!device_.is_cpu()) c10::getDeviceAllocator(device_.type())->resetPeakStats(device_.index());
}

std::string AcceleratorConfig::strategy_name(int64_t world_size) const {
  if (!fsdp()) return world_size == 1 ? "single" : "ddp";
  return std::string(reshard_after_forward ? "fsdp zero-3" : "fsdp zero-2") + (dp_replicate > 1 ? " hybrid" : "") +
         " (dp_shard " + std::to_string(dp_shard) + " x dp_replicate " + std::to_string(dp_replicate) + ")";
}

std::string Accelerator::strategy() const {
  return config_.strategy_name(world_size());
}

MemoryStats Accelerator::memory_stats(const optim::Optimizer* optimizer) const {
  MemoryStats stats;
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  };
  if (fsdp_) {
    auto memory = fsdp_->memory();
    stats.parameter_bytes = memory.parameter_bytes;
    stats.gradient_bytes = memory.gradient_bytes;
  } else {
    for (const auto& p : prepared_params_) {
      stats.parameter_bytes += bytes(p);
      stats.gradient_bytes += bytes(p.grad());
    }
  }
  if (optimizer != nullptr) stats.optimizer_bytes = optimizer->state_bytes();
  return stats;
}

Accelerator::~Accelerator() {
  fsdp_.reset();  // unhooks the policy while the Comm is certainly alive
  // The Comm outlives us (process-wide); it must not call back into a destroyed accelerator.
  comm_->clear_collective_guard(this);
}

std::string Accelerator::batch_semantics() const {
  return "effective batch " + std::to_string(effective_batch()) + " = batch_size " +
         std::to_string(config_.batch_size) + " x " + std::to_string(world_size()) + " data-parallel rank(s) x " +
         std::to_string(config_.gradient_accumulation_steps) + " accumulation step(s)";
}

void Accelerator::broadcast_module_state(policy::Policy& policy) {
  if (world_size() == 1) return;
  torch::NoGradGuard no_grad;
  // Parameters and buffers travel as one flat tensor per dtype (one collective each).
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (auto& p : policy.parameters()) by_dtype[p.scalar_type()].push_back(p);
  for (auto& b : policy.buffers()) by_dtype[b.scalar_type()].push_back(b);
  for (auto& [dtype, tensors] : by_dtype) {
    auto flat = torch::utils::flatten_dense_tensors(tensors);
    comm_->broadcast(flat, 0);
    auto pieces = torch::utils::unflatten_dense_tensors(flat, tensors);
    for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].copy_(pieces[i]);
  }
}

void Accelerator::prepare(policy::Policy& policy, optim::Optimizer* optimizer) {
  if (!prepared_params_.empty())
    throw util::ConfigError("accelerator:prepare was already called; prepare once per run");
  // File-backed weights (ckpt::WeightLoading::file_backed) are the same file's on every rank: no
  // broadcast, which would also flatten a whole copy. Under FSDP they stay where they are until the
  // engine copies each rank's rows onto the device, so no rank holds the whole model.
  const bool shard_from_file = policy.weights_file_backed() && config_.fsdp();
  // Weights loaded with a cast (policy.dtype other than the file's) are cast here one tensor at a
  // time, or under FSDP each rank's rows as the engine copies them out.
  if (!shard_from_file) policy.materialize_file_casts();
  if (!shard_from_file) policy.to(device_);
  if (!policy.weights_file_backed()) broadcast_module_state(policy);
  policy.set_autocast(autocast_spec());
  if (policy.trainable_parameters().empty()) throw util::ConfigError("prepare: the policy has no trainable parameters");
  if (is_main_process()) {
    std::vector<torch::ScalarType> dtypes;
    for (const auto& p : policy.trainable_parameters()) dtypes.push_back(p.scalar_type());
    auto report = describe_precision(dtypes, config_.mixed_precision);
    if (auto own = policy.own_autocast()) report.text += "; the policy itself " + *own;
    if (report.warn)
      spdlog::warn("precision: {}", report.text);
    else
      spdlog::info("precision: {}", report.text);
  }
  if (config_.fsdp()) {
    dist::fsdp::FsdpOptions options;
    options.shard_size = static_cast<int>(shard_size_);
    options.replicate_size = static_cast<int>(config_.dp_replicate);
    options.reshard_after_forward = config_.reshard_after_forward;
    options.wrap_modules = config_.wrap_modules;
    // bf16 mixed precision gathers bf16 parameters (fp32 shards stay the master copy); fp16 keeps
    // fp32 parameters so the loss scaler sees fp32 gradients.
    if (config_.mixed_precision == MixedPrecision::bf16) options.param_dtype = torch::kBFloat16;
    if (shard_from_file) options.device = device_;
    fsdp_ = std::make_unique<dist::fsdp::FsdpEngine>(policy, options, comm_);
    policy.materialize_file_casts();          // none left: every parameter is in a unit
    if (shard_from_file) policy.to(device_);  // the buffers (the parameters are on the device now)
    const auto& groups = fsdp_->view().units;
    const auto frozen = std::count_if(groups.begin(), groups.end(), [](const auto& g) { return g.frozen; });
    spdlog::info("{}: {} parameter group(s) ({} frozen), rank {} holds shard {}/{} of replica {}/{}", strategy(),
                 groups.size(), frozen, rank(), fsdp_->view().shard_rank, fsdp_->view().shard_size,
                 fsdp_->view().replicate_rank, fsdp_->view().replicate_size);
  }
  prepared_params_ = policy.trainable_parameters();
  state_->params = prepared_params_;
  state_->sharded = fsdp_ != nullptr;
  state_->replicas = fsdp_ ? config_.dp_replicate : 1;
  if (world_size() > 1 && !fsdp_)
    reducer_ = std::make_unique<dist::DdpReducer>(prepared_params_, comm_, config_.buckets);
  if (optimizer != nullptr) {
    auto state = state_;
    optimizer->set_step_hooks(
        [state](optim::Optimizer& opt) {
          if (!state->sync) return false;
          if (auto divergence = state->check()) {
            state->guard.handle(*divergence, state->main_process);  // throws unless the step may be skipped
            opt.zero_grad();
            return false;
          }
          if (!state->scaler) return true;
          bool found_inf = state->fp16_check == GradScaler::Check::overflow;
          state->scaler->update(found_inf);
          if (found_inf)
            spdlog::warn("fp16: non-finite gradients, optimizer step skipped (loss scale now {})",
                         state->scaler->scale());
          return !found_inf;
        },
        [state] { return state->sync; });
  }
}

void Accelerator::backward(const torch::Tensor& loss) {
  if (!loss.defined() || loss.numel() != 1)
    throw util::ConfigError("backward: the loss must be a tensor with one element");
  if (!loss.requires_grad())
    throw util::ConfigError("backward: the loss does not require grad",
                            "was it computed under lr.no_grad, or detached?");
  const int64_t accumulation = config_.gradient_accumulation_steps;
  bool boundary = (micro_step_ + 1) % accumulation == 0;
  if (reducer_) reducer_->set_sync(boundary);
  if (fsdp_) fsdp_->set_sync(boundary);
  const bool cycle_start = micro_step_ % accumulation == 0;
  auto scaled = state_->guard.watch_loss(loss, cycle_start);
  if (accumulation > 1) scaled = scaled / static_cast<double>(accumulation);
  if (state_->scaler) scaled = state_->scaler->scale_loss(scaled);
  // A new cycle starts with fresh fp16 and gradient-norm bookkeeping.
  if (cycle_start) {
    state_->unscaled = false;
    state_->fp16_check = GradScaler::Check::clean;
    state_->grad_norm.reset();
  }
  scaled.backward();
  ++micro_step_;
  state_->sync = boundary;
}

bool Accelerator::sync_gradients() const {
  return state_->sync;
}

std::optional<double> Accelerator::clip_grad_norm(double max_norm) {
  if (!(max_norm > 0)) throw util::ConfigError("clip_grad_norm: max_norm must be > 0, got " + std::to_string(max_norm));
  if (prepared_params_.empty())
    throw util::ConfigError("clip_grad_norm: call accelerator:prepare(policy, optimizer) first");
  if (!state_->sync) return std::nullopt;
  state_->unscale_once();
  // FSDP: each rank holds a slice of the gradients; the engine sums squared norms over the group.
  // DDP: after the all-reduce every rank holds the same averaged gradients, so the local norm is
  // the global one. Either way every rank gets the same norm: the divergence guard's verdict.
  double norm = fsdp_ ? fsdp_->clip_grad_norm(max_norm) : optim::clip_grad_norm(prepared_params_, max_norm);
  state_->grad_norm = norm;
  return norm;
}

Accelerator::StepResult Accelerator::eager_step(policy::Policy& policy, optim::Optimizer& optimizer,
                                                const policy::Batch& batch, const StepOptions& options,
                                                metrics::TrainingMeter* meter) {
  auto mark = [meter](const char* phase) {
    if (meter != nullptr) meter->mark(phase);
  };
  auto out = policy.run(batch);
  mark("forward");
  backward(out.loss);
  mark("backward");
  StepResult result{out.loss, std::move(out.parts), std::nullopt, std::nullopt};
  if (options.max_norm > 0) result.grad_norm = clip_grad_norm(options.max_norm);
  optimizer.step();
  if (options.measure_memory) result.memory = memory_stats(&optimizer);
  optimizer.zero_grad();
  return result;
}

void Accelerator::start_graph_runner(policy::Policy& policy, optim::Optimizer& optimizer, double max_norm) {
  CudaGraphRequest request;
  request.requested = config_.cuda_graph;
  request.cuda = device_.is_cuda();
  request.world_size = world_size();
  request.sharded = fsdp_ != nullptr;
  request.gradient_accumulation_steps = config_.gradient_accumulation_steps;
  request.mixed_precision = config_.mixed_precision;
  request.nonfinite = config_.nonfinite;
  request.optimizer_kind = optimizer.kind();
  request.policy_blocker = policy.cuda_graph_blocker();
  auto decision = decide_cuda_graph(request);
  if (config_.cuda_graph && !decision.capture && is_main_process())
    spdlog::warn("accelerator.cuda_graph: not capturing the training step, running eager steps: {}", decision.reason);
  std::unique_ptr<CapturedStep> step;
  if (decision.capture) step = std::make_unique<CudaGraphStep>(policy, optimizer, max_norm, device_);
  graph_ =
      std::make_unique<CudaGraphRunner>(config_.cuda_graph, std::move(decision), std::move(step), is_main_process());
}

Accelerator::StepResult Accelerator::train_step(policy::Policy& policy, optim::Optimizer& optimizer,
                                                const policy::Batch& batch, const StepOptions& options) {
  if (prepared_params_.empty())
    throw util::ConfigError("train_step: call accelerator:prepare(policy, optimizer) first");
  if (!graph_) start_graph_runner(policy, optimizer, options.max_norm);
  StepResult result;
  if (graph_->active()) {
    result = graph_step(policy, optimizer, batch, options);
    if (options.meter != nullptr) options.meter->mark("train_step");
  } else {
    result = eager_step(policy, optimizer, batch, options, options.meter);
  }
  if (options.scheduler != nullptr) options.scheduler->step();
  if (options.meter != nullptr) options.meter->mark("optimizer");
  return result;
}

Accelerator::StepResult Accelerator::graph_step(policy::Policy& policy, optim::Optimizer& optimizer,
                                                const policy::Batch& batch, const StepOptions& options) {
  StepResult result;
  auto eager = [&] {
    // After a replay the parameters' .grad are the graph's own buffers, which backward would add to.
    optimizer.torch_optimizer().zero_grad(/*set_to_none=*/true);
    result = eager_step(policy, optimizer, batch, options, nullptr);
  };
  auto outputs = graph_->run(policy, optimizer, options.max_norm, batch, eager);
  if (!outputs) return result;
  result = finish_replay(std::move(*outputs));
  // A replayed step's gradients stay in the graph's buffers, so memory read after it counts them.
  if (options.measure_memory) result.memory = memory_stats(&optimizer);
  return result;
}

Accelerator::StepResult Accelerator::finish_replay(StepOutputs outputs) {
  ++micro_step_;
  state_->sync = true;
  state_->guard.count_step();
  // One read-back per step, as the eager step's clip_grad_norm makes: the divergence guard's verdict.
  auto checked = outputs.grad_norm.defined() ? torch::stack({outputs.loss.reshape({}), outputs.grad_norm.reshape({})})
                                             : outputs.loss.reshape({1});
  auto values = checked.to(torch::kFloat64).cpu();
  const double loss = values[0].item<double>();
  std::optional<double> grad_norm;
  if (outputs.grad_norm.defined()) grad_norm = values[1].item<double>();
  state_->grad_norm = grad_norm;
  if (!std::isfinite(loss) || (grad_norm && !std::isfinite(*grad_norm))) {
    // The graph has applied the update already; the guard's only policy here is to stop (the
    // "skip" policy refuses capture), before a checkpoint could save the damaged weights.
    Divergence divergence =
        !std::isfinite(loss) ? Divergence{"loss", loss, rank()} : Divergence{"gradient norm", *grad_norm, -1};
    state_->guard.handle(divergence, is_main_process());
  }
  return StepResult{outputs.loss, std::move(outputs.parts), grad_norm, std::nullopt};
}

std::string Accelerator::cuda_graph_status() const {
  return graph_ ? graph_->status() : (config_.cuda_graph ? "warming up" : "off");
}

std::optional<nn::AutocastSpec> Accelerator::autocast_spec() const {
  auto dtype = autocast_dtype(config_.mixed_precision);
  if (!dtype) return std::nullopt;
  return nn::AutocastSpec{device_.type(), *dtype};
}

std::optional<double> Accelerator::loss_scale() const {
  if (!state_->scaler) return std::nullopt;
  return state_->scaler->scale();
}

int64_t Accelerator::skipped_steps() const {
  return state_->scaler ? state_->scaler->skipped_steps() : 0;
}

int64_t Accelerator::skipped_nonfinite_steps() const {
  return state_->guard.skipped_steps();
}

void Accelerator::set_next_step(int64_t step) {
  if (step < 1) throw util::ConfigError("the next step must be >= 1, got " + std::to_string(step));
  state_->guard.set_next_step(step);
}

void Accelerator::set_last_checkpoint(std::string dir) {
  state_->guard.set_last_checkpoint(std::move(dir));
}

void Accelerator::set_guard_context(const nlohmann::json& options) {
  config::ConfigReader reader(options, "acc:guard_context");
  const auto next_step = reader.optional_integer("next_step");
  if (next_step && *next_step < 1)
    throw util::ConfigError("acc:guard_context: 'next_step' must be >= 1, got " + std::to_string(*next_step));
  std::optional<std::string> checkpoint;
  if (options.contains("checkpoint")) checkpoint = reader.string("checkpoint", "");
  reader.reject_unknown();
  if (next_step) set_next_step(*next_step);
  if (checkpoint) set_last_checkpoint(*checkpoint);
}

std::optional<dist::DdpStats> Accelerator::ddp_stats() const {
  if (!reducer_) return std::nullopt;
  return reducer_->stats();
}

}  // namespace lrhost::accel
