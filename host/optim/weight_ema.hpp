// The exponential moving average of a model's trainable weights (EMA, reference ema.md), updated
// once per applied optimizer step with diffusers' EMAModel arithmetic, as LeRobot main uses it:
// shadow -= (1 - decay) * (shadow - param), element by element in that order, so a trajectory equals
// diffusers' bit for bit in fp32. The shadow is fp32 whatever the weights' dtype (diffusers keeps
// the weights' dtype; LeRobot's weights are fp32, where the two agree).
//
// What is tracked is what the optimizer trains: frozen parameters never change, so their average is
// the parameter itself (diffusers copies them every step) and no shadow is kept for them; buffers are
// not tracked (as diffusers). Under FSDP each rank tracks its own shards (memory = shard size); with
// LoRA only the adapters and the modules trained in full.
//
// The update is one pass over each CPU tensor (fp32 or bf16 weights: the same three roundings in one
// loop); elsewhere (GPU) chunks of at most 64 MiB of tensors of one dtype, three foreach kernels each,
// whose temporary is one chunk, never a model-sized copy.
//
// swap_in / swap_out put the EMA weights into the parameters and back (evaluation, saving the EMA
// folder): where shadow and parameter share a dtype the two exchange values in place (no extra
// copy); otherwise the live values are kept aside in the parameter's dtype.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "host/optim/ema_settings.hpp"
#include "host/optim/optimizer.hpp"

namespace lrhost::optim {

class WeightEma {
 public:
  // `tracked`: this rank's trainable parameters by name (the model's own tensors). The shadow starts
  // as their fp32 copy, as diffusers' EMAModel(parameters) does.
  WeightEma(EmaSettings settings, std::vector<std::pair<std::string, torch::Tensor>> tracked);

  // One EMA step: optimization_step + 1, decay = ema_decay(settings, optimization_step), then every
  // shadow moves towards its parameter. ConfigError while swapped in.
  void update();

  const EmaSettings& settings() const { return settings_; }
  int64_t optimization_step() const { return optimization_step_; }
  // The decay the last update used (0 before any; diffusers' cur_decay_value).
  double last_decay() const { return last_decay_; }
  // The shadows by parameter name (fp32, shaped as the parameters: under FSDP, shards).
  const std::vector<std::pair<std::string, torch::Tensor>>& shadows() const { return shadows_; }
  torch::Tensor shadow(const std::string& name) const;  // ConfigError for a name not tracked
  int64_t shadow_bytes() const;

  // The EMA weights into the parameters (the live ones kept), and back. swap_in twice, or swap_out
  // without swap_in, is a ConfigError.
  void swap_in();
  void swap_out();
  bool swapped_in() const { return swapped_; }

  // training_state's JSON part: format, optimization_step, last decay and the settings.
  nlohmann::ordered_json state_json() const;
  // Restores the step from state_json's output (DataError naming `where` otherwise). A settings
  // difference is allowed (a resume may change the decay) and logged.
  void load_step(const nlohmann::json& json, const std::string& where);
  // Copies saved shadows in (cast to fp32): exactly the tracked names with their shapes (under FSDP
  // the shard shapes), DataError naming `where` otherwise; nothing changes before all are checked.
  void load_shadows(const std::map<std::string, torch::Tensor>& shadows, const std::string& where);
  // The shadow restarts as the parameters' current values, at step 0 (a resume whose checkpoint has
  // no EMA, as LeRobot main does).
  void reset_to_parameters();

 private:
  EmaSettings settings_;
  std::vector<std::pair<std::string, torch::Tensor>> params_, shadows_;
  std::vector<torch::Tensor> stash_;  // while swapped in: the live values where dtypes differ
  int64_t optimization_step_ = 0;
  double last_decay_ = 0;
  bool swapped_ = false;
};

// A run's EMA (lr.optim.ema): of the parameters among `named` (the policy's, after the accelerator
// prepared it: under FSDP this rank's shards) that `optimizer` trains, moved after each of its
// applied steps. nullptr on a rank that keeps none (on_main_only, not the main process). ConfigError
// for settings.enable false, on_main_only under FSDP (`sharded`), or an optimizer that trains none.
std::shared_ptr<WeightEma> attach_weight_ema(const EmaSettings& settings,
                                             const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                             Optimizer& optimizer, bool sharded, bool main_process);

// The training_state/ files of an EMA without FSDP (with FSDP the shadows go into the shard files).
inline constexpr const char* kEmaStateFile = "ema_state.json";
inline constexpr const char* kEmaShadowFile = "ema_shadow.safetensors";

}  // namespace lrhost::optim
