// Optimizer and scheduler state in LeRobot's training_state files (optim/optimizers.py,
// optim/schedulers.py): optimizer.state_dict() split into optimizer_param_groups.json (the groups'
// hyperparameters with exactly the keys and JSON types of torch 2.11's Python Adam / AdamW / SGD,
// since LeRobot's loader rejects any difference) and optimizer_state.safetensors with flat
// "state/<idx>/<name>" tensors (idx counts parameters across the groups in order; Adam's step is a
// float32 0-d tensor), and scheduler_state.json with LambdaLR's state_dict keys. Restoring writes the
// per-parameter state back into the LibTorch optimizer so training continues bit for bit.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "host/optim/optimizer.hpp"
#include "host/optim/scheduler.hpp"

namespace lrhost::optim {

inline constexpr const char* kOptimizerStateFile = "optimizer_state.safetensors";
inline constexpr const char* kOptimizerParamGroupsFile = "optimizer_param_groups.json";
inline constexpr const char* kSchedulerStateFile = "scheduler_state.json";

// The param_groups list as Python's optimizer.state_dict() has it; `with_initial_lr` adds the
// "initial_lr" a Python LR scheduler puts into every group.
nlohmann::ordered_json optimizer_param_groups(Optimizer& optimizer, bool with_initial_lr);
// "state/<idx>/<name>" tensors (CPU, contiguous) of every parameter that has state.
std::vector<std::pair<std::string, torch::Tensor>> optimizer_state_tensors(Optimizer& optimizer);

// Writes both files into `dir`.
void save_optimizer_state(Optimizer& optimizer, const std::filesystem::path& dir, bool with_initial_lr);
// Restores both files from `dir` into an optimizer built over the same parameter groups: group
// count, parameter count per group, key set and JSON types per group, tensor names, shapes and dtypes
// are checked (DataError naming the file); group hyperparameters (lr, betas, eps, weight_decay) are
// taken from the file, as torch's load_state_dict does.
void load_optimizer_state(Optimizer& optimizer, const std::filesystem::path& dir);
// The same when the optimizer's parameters are not the saved ones but parts of them (an FSDP rank's
// shards resuming a checkpoint written without FSDP): `part` turns a saved full state tensor (`name`
// e.g. "exp_avg"; "step" is passed too) into the one `param` holds; the result is checked against
// `param` as above.
using StatePart =
    std::function<torch::Tensor(const torch::Tensor& param, const std::string& name, const torch::Tensor& saved)>;
void load_optimizer_state(Optimizer& optimizer, const std::filesystem::path& dir, const StatePart& part);

// Only the group checks and hyperparameters of load_optimizer_state (FSDP checkpoints keep the
// per-parameter state in their shard files instead of optimizer_state.safetensors).
void load_optimizer_param_groups(Optimizer& optimizer, const std::filesystem::path& dir);
// One parameter's state tensors by torch's names (Adam: step as a 0-d float32, exp_avg, exp_avg_sq,
// max_exp_avg_sq when defined; SGD: momentum_buffer); empty when it has no state yet.
std::vector<std::pair<std::string, torch::Tensor>> param_state_tensors(Optimizer& optimizer,
                                                                       const torch::Tensor& param);
// Checks one parameter's state tensors for an optimizer of `kind` before they are set: only torch's
// names, Adam's step / exp_avg / exp_avg_sq present, step one number, the others shaped and typed
// like the parameter. DataError "<file>: ..." naming the tensor as `key_prefix` + name and the
// parameter as `owner`.
void check_param_state(OptimizerKind kind, const std::map<std::string, torch::Tensor>& entries,
                       c10::IntArrayRef param_shape, c10::ScalarType param_dtype, const std::string& file,
                       const std::string& owner, const std::string& key_prefix);
// Replaces one parameter's state from such tensors (copied to the parameter's device). The names
// must have been checked (check_param_state).
void set_param_state(Optimizer& optimizer, const torch::Tensor& param,
                     const std::map<std::string, torch::Tensor>& entries);
// Drops one parameter's state (it starts fresh at the next step, as in torch).
void erase_param_state(Optimizer& optimizer, const torch::Tensor& param);

// LambdaLR.state_dict() of torch 2.11 for this scheduler.
nlohmann::ordered_json scheduler_state_json(const LrScheduler& scheduler, const Optimizer& optimizer);
void save_scheduler_state(const LrScheduler& scheduler, const Optimizer& optimizer, const std::filesystem::path& dir);
// Restores the position (last_epoch) after checking the file's keys and group count.
void load_scheduler_state(LrScheduler& scheduler, const Optimizer& optimizer, const std::filesystem::path& dir);

}  // namespace lrhost::optim
