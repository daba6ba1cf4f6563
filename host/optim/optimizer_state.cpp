// LeRobot/torch optimizer and scheduler state files for LibTorch optimizers; see optimizer_state.hpp.
#include "host/optim/optimizer_state.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <set>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/util/error.hpp"

namespace lrhost::optim {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

ordered_json parse_json_file(const fs::path& file) {
  return io::read_json_file(file, "the file is corrupt or truncated; use an earlier checkpoint");
}

// Group hyperparameters of one LibTorch group in torch 2.11 Python's key order and JSON types.
ordered_json group_json(OptimizerKind kind, const torch::optim::OptimizerOptions& options) {
  ordered_json g;
  if (is_adam_family(kind)) {
    double lr, eps, wd;
    std::tuple<double, double> betas;
    bool amsgrad;
    if (kind == OptimizerKind::adamw) {
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(options);
      lr = o.lr(), eps = o.eps(), wd = o.weight_decay(), betas = o.betas(), amsgrad = o.amsgrad();
    } else {
      const auto& o = static_cast<const torch::optim::AdamOptions&>(options);
      lr = o.lr(), eps = o.eps(), wd = o.weight_decay(), betas = o.betas(), amsgrad = o.amsgrad();
    }
    g["lr"] = lr;
    g["betas"] = {std::get<0>(betas), std::get<1>(betas)};
    g["eps"] = eps;
    g["weight_decay"] = wd;
    g["amsgrad"] = amsgrad;
    g["maximize"] = false;
    g["foreach"] = nullptr;
    g["capturable"] = false;
    g["differentiable"] = false;
    g["fused"] = nullptr;
    g["decoupled_weight_decay"] = kind == OptimizerKind::adamw;
  } else {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(options);
    g["lr"] = o.lr();
    g["momentum"] = o.momentum();
    g["dampening"] = o.dampening();
    g["weight_decay"] = o.weight_decay();
    g["nesterov"] = o.nesterov();
    g["maximize"] = false;
    g["foreach"] = nullptr;
    g["differentiable"] = false;
    g["fused"] = nullptr;
  }
  return g;
}

// Keys whose values LibTorch cannot honour: they must hold torch's defaults.
const std::map<std::string, ordered_json>& fixed_values() {
  static const std::map<std::string, ordered_json> values{
      {"maximize", false}, {"foreach", nullptr}, {"capturable", false}, {"differentiable", false}, {"fused", nullptr}};
  return values;
}

void check_group(const ordered_json& saved, const ordered_json& current, const std::string& where) {
  if (!saved.is_object()) throw util::DataError(where + " must be an object");
  for (const auto& [key, value] : saved.items()) {
    if (key == "params" || key == "initial_lr") continue;
    if (!current.contains(key))
      throw util::DataError(where + ": unknown key '" + key + "' for this optimizer",
                            "the checkpoint was written for a different optimizer type");
    const auto& expected = current[key];
    bool same_type = (expected.is_number_float() && value.is_number()) ||
                     (expected.is_boolean() && value.is_boolean()) ||
                     (expected.is_array() && value.is_array() && value.size() == expected.size()) ||
                     (expected.is_null() && (value.is_null() || value.is_boolean()));
    if (!same_type)
      throw util::DataError(where + ": '" + key + "' is " + value.dump() + ", expected a value like " +
                            expected.dump());
    auto fixed = fixed_values().find(key);
    if (fixed != fixed_values().end() && !(value == fixed->second || (value.is_boolean() && !value.get<bool>())))
      throw util::DataError(where + ": '" + key + "' = " + value.dump() + " is not supported by lrhost's optimizers");
  }
  for (const auto& [key, value] : current.items())
    if (!saved.contains(key) && !fixed_values().count(key) && key != "decoupled_weight_decay")
      throw util::DataError(where + ": missing key '" + key + "'");
  if (saved.contains("decoupled_weight_decay") && saved["decoupled_weight_decay"] != current["decoupled_weight_decay"])
    throw util::DataError(where + ": decoupled_weight_decay = " + saved["decoupled_weight_decay"].dump() +
                              " but this optimizer is " +
                              (current["decoupled_weight_decay"].get<bool>() ? "adamw" : "adam"),
                          "resume with the optimizer the checkpoint was written with");
}

void apply_group(OptimizerKind kind, torch::optim::OptimizerOptions& options, const ordered_json& g) {
  if (is_adam_family(kind)) {
    auto betas = std::make_tuple(g["betas"][0].get<double>(), g["betas"][1].get<double>());
    if (kind == OptimizerKind::adamw) {
      auto& o = static_cast<torch::optim::AdamWOptions&>(options);
      o.lr(g["lr"].get<double>()).eps(g["eps"].get<double>()).weight_decay(g["weight_decay"].get<double>());
      o.betas(betas).amsgrad(g["amsgrad"].get<bool>());
    } else {
      auto& o = static_cast<torch::optim::AdamOptions&>(options);
      o.lr(g["lr"].get<double>()).eps(g["eps"].get<double>()).weight_decay(g["weight_decay"].get<double>());
      o.betas(betas).amsgrad(g["amsgrad"].get<bool>());
    }
  } else {
    auto& o = static_cast<torch::optim::SGDOptions&>(options);
    o.lr(g["lr"].get<double>()).momentum(g["momentum"].get<double>()).dampening(g["dampening"].get<double>());
    o.weight_decay(g["weight_decay"].get<double>()).nesterov(g["nesterov"].get<bool>());
  }
}

// The state tensors of one parameter, by torch's names.
std::vector<std::pair<std::string, torch::Tensor>> param_state(OptimizerKind kind,
                                                               const torch::optim::OptimizerParamState& state) {
  auto scalar_step = [](int64_t step) { return torch::tensor(static_cast<float>(step), torch::kFloat32); };
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (is_adam_family(kind)) {
    int64_t step;
    torch::Tensor avg, avg_sq, max_sq;
    if (kind == OptimizerKind::adamw) {
      const auto& s = static_cast<const torch::optim::AdamWParamState&>(state);
      step = s.step(), avg = s.exp_avg(), avg_sq = s.exp_avg_sq(), max_sq = s.max_exp_avg_sq();
    } else {
      const auto& s = static_cast<const torch::optim::AdamParamState&>(state);
      step = s.step(), avg = s.exp_avg(), avg_sq = s.exp_avg_sq(), max_sq = s.max_exp_avg_sq();
    }
    out.emplace_back("step", scalar_step(step));
    out.emplace_back("exp_avg", avg);
    out.emplace_back("exp_avg_sq", avg_sq);
    if (max_sq.defined()) out.emplace_back("max_exp_avg_sq", max_sq);
  } else {
    const auto& s = static_cast<const torch::optim::SGDParamState&>(state);
    if (s.momentum_buffer().defined()) out.emplace_back("momentum_buffer", s.momentum_buffer());
  }
  return out;
}

}  // namespace

ordered_json optimizer_param_groups(Optimizer& optimizer, bool with_initial_lr) {
  ordered_json groups = ordered_json::array();
  int64_t index = 0;
  auto& torch_groups = optimizer.torch_optimizer().param_groups();
  for (std::size_t g = 0; g < torch_groups.size(); ++g) {
    ordered_json group = group_json(optimizer.kind(), torch_groups[g].options());
    if (with_initial_lr) group["initial_lr"] = optimizer.initial_lr(g);
    ordered_json params = ordered_json::array();
    for (std::size_t i = 0; i < torch_groups[g].params().size(); ++i) params.push_back(index++);
    group["params"] = params;
    groups.push_back(group);
  }
  return groups;
}

std::vector<std::pair<std::string, torch::Tensor>> optimizer_state_tensors(Optimizer& optimizer) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  auto& torch_optimizer = optimizer.torch_optimizer();
  int64_t index = 0;
  for (auto& group : torch_optimizer.param_groups()) {
    for (auto& p : group.params()) {
      auto found = torch_optimizer.state().find(p.unsafeGetTensorImpl());
      if (found != torch_optimizer.state().end())
        for (auto& [name, tensor] : param_state(optimizer.kind(), *found->second))
          tensors.emplace_back("state/" + std::to_string(index) + "/" + name,
                               tensor.detach().to(torch::kCPU).contiguous());
      ++index;
    }
  }
  return tensors;
}

void save_optimizer_state(Optimizer& optimizer, const fs::path& dir, bool with_initial_lr) {
  io::write_safetensors(dir / kOptimizerStateFile, optimizer_state_tensors(optimizer));
  io::write_file_atomic(dir / kOptimizerParamGroupsFile, optimizer_param_groups(optimizer, with_initial_lr).dump(4));
}

// Checks optimizer_param_groups.json against the optimizer; returns the saved groups and the
// optimizer's parameters in state-index order.
static std::pair<ordered_json, std::vector<torch::Tensor>> check_param_groups(Optimizer& optimizer,
                                                                              const fs::path& dir) {
  const fs::path groups_file = dir / kOptimizerParamGroupsFile;
  ordered_json saved = parse_json_file(groups_file);
  auto& torch_optimizer = optimizer.torch_optimizer();
  auto& groups = torch_optimizer.param_groups();
  if (!saved.is_array() || saved.size() != groups.size())
    throw util::DataError(groups_file.string() + ": holds " + (saved.is_array() ? std::to_string(saved.size()) : "no") +
                              " parameter group(s), the optimizer has " + std::to_string(groups.size()),
                          "resume with the policy and optimizer config the checkpoint was written with");
  ordered_json current = optimizer_param_groups(optimizer, false);
  std::vector<torch::Tensor> params;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string where = groups_file.string() + " group " + std::to_string(g);
    check_group(saved[g], current[g], where);
    if (!saved[g].contains("params") || !saved[g]["params"].is_array() ||
        saved[g]["params"].size() != groups[g].params().size())
      throw util::DataError(where + ": 'params' lists " +
                                (saved[g].contains("params") ? std::to_string(saved[g]["params"].size()) : "no") +
                                " parameters, the group has " + std::to_string(groups[g].params().size()),
                            "resume with the policy and optimizer config the checkpoint was written with");
    if (saved[g].contains("initial_lr") && saved[g]["initial_lr"].is_number() &&
        saved[g]["initial_lr"].get<double>() != optimizer.initial_lr(g))
      spdlog::warn("{}: initial_lr {} differs from this run's {}; the schedule uses this run's value", where,
                   saved[g]["initial_lr"].get<double>(), optimizer.initial_lr(g));
    params.insert(params.end(), groups[g].params().begin(), groups[g].params().end());
  }
  return {saved, params};
}

void load_optimizer_state(Optimizer& optimizer, const fs::path& dir) {
  load_optimizer_state(optimizer, dir, {});
}

void load_optimizer_state(Optimizer& optimizer, const fs::path& dir, const StatePart& part) {
  const fs::path state_file = dir / kOptimizerStateFile;
  auto [saved, params] = check_param_groups(optimizer, dir);
  auto& torch_optimizer = optimizer.torch_optimizer();
  auto& groups = torch_optimizer.param_groups();
  auto content = io::read_safetensors(state_file);
  // name -> tensor per parameter index, checked before anything changes.
  std::map<int64_t, std::map<std::string, torch::Tensor>> by_index;
  for (const auto& [name, tensor] : content.tensors) {
    auto first = name.find('/'), second = name.rfind('/');
    int64_t index = -1;
    if (name.rfind("state/", 0) == 0 && second > first) {
      try {
        std::size_t used = 0;
        index = std::stoll(name.substr(first + 1, second - first - 1), &used);
        if (used != second - first - 1) index = -1;
      } catch (...) {
        index = -1;
      }
    }
    if (index < 0 || index >= static_cast<int64_t>(params.size()))
      throw util::DataError(state_file.string() + ": tensor '" + name +
                            "' is not state/<index>/<name> with an index "
                            "below " +
                            std::to_string(params.size()));
    by_index[index][name.substr(second + 1)] = tensor;
  }
  if (part)
    for (auto& [index, entries] : by_index)
      for (auto& [name, tensor] : entries) tensor = part(params[static_cast<std::size_t>(index)], name, tensor);
  const OptimizerKind kind = optimizer.kind();
  for (const auto& [index, entries] : by_index) {
    const auto& p = params[static_cast<std::size_t>(index)];
    check_param_state(kind, entries, p.sizes(), p.scalar_type(), state_file.string(),
                      "parameter " + std::to_string(index), "state/" + std::to_string(index) + "/");
  }
  for (std::size_t g = 0; g < groups.size(); ++g) apply_group(kind, groups[g].options(), saved[g]);
  torch_optimizer.state().clear();
  for (const auto& [index, entries] : by_index)
    set_param_state(optimizer, params[static_cast<std::size_t>(index)], entries);
}

void load_optimizer_param_groups(Optimizer& optimizer, const fs::path& dir) {
  auto [saved, params] = check_param_groups(optimizer, dir);
  auto& groups = optimizer.torch_optimizer().param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) apply_group(optimizer.kind(), groups[g].options(), saved[g]);
}

std::vector<std::pair<std::string, torch::Tensor>> param_state_tensors(Optimizer& optimizer,
                                                                       const torch::Tensor& param) {
  auto& state = optimizer.torch_optimizer().state();
  auto found = state.find(param.unsafeGetTensorImpl());
  if (found == state.end()) return {};
  return param_state(optimizer.kind(), *found->second);
}

void check_param_state(OptimizerKind kind, const std::map<std::string, torch::Tensor>& entries,
                       c10::IntArrayRef param_shape, c10::ScalarType param_dtype, const std::string& file,
                       const std::string& owner, const std::string& key_prefix) {
  const std::set<std::string> allowed = is_adam_family(kind)
                                            ? std::set<std::string>{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
                                            : std::set<std::string>{"momentum_buffer"};
  for (const auto& [name, tensor] : entries) {
    const std::string key = key_prefix + name;
    if (!allowed.count(name))
      throw util::DataError(file + ": unexpected tensor '" + key + "' for a " + optimizer_kind_name(kind) +
                            " optimizer");
    if (name == "step") {
      if (tensor.numel() != 1) throw util::DataError(file + ": '" + key + "' must hold one number");
      continue;
    }
    if (tensor.sizes() != param_shape || tensor.scalar_type() != param_dtype)
      throw util::DataError(file + ": '" + key + "' is " + c10::str(tensor.sizes()) + " " +
                            std::string(c10::toString(tensor.scalar_type())) + ", the parameter is " +
                            c10::str(param_shape) + " " + std::string(c10::toString(param_dtype)));
  }
  if (is_adam_family(kind) && (!entries.count("step") || !entries.count("exp_avg") || !entries.count("exp_avg_sq")))
    throw util::DataError(file + ": " + owner + " needs step, exp_avg and exp_avg_sq");
}

void erase_param_state(Optimizer& optimizer, const torch::Tensor& param) {
  optimizer.torch_optimizer().state().erase(param.unsafeGetTensorImpl());
}

void set_param_state(Optimizer& optimizer, const torch::Tensor& param,
                     const std::map<std::string, torch::Tensor>& entries) {
  const OptimizerKind kind = optimizer.kind();
  auto& state_map = optimizer.torch_optimizer().state();
  auto on_device = [&](const torch::Tensor& t) { return t.to(param.device()).clone(); };
  void* key = param.unsafeGetTensorImpl();
  if (is_adam_family(kind)) {
    auto step = static_cast<int64_t>(std::llround(entries.at("step").to(torch::kFloat64).item<double>()));
    auto max_sq = entries.count("max_exp_avg_sq") ? on_device(entries.at("max_exp_avg_sq")) : torch::Tensor();
    if (kind == OptimizerKind::adamw) {
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(step).exp_avg(on_device(entries.at("exp_avg"))).exp_avg_sq(on_device(entries.at("exp_avg_sq")));
      if (max_sq.defined()) state->max_exp_avg_sq(max_sq);
      state_map[key] = std::move(state);
    } else {
      auto state = std::make_unique<torch::optim::AdamParamState>();
      state->step(step).exp_avg(on_device(entries.at("exp_avg"))).exp_avg_sq(on_device(entries.at("exp_avg_sq")));
      if (max_sq.defined()) state->max_exp_avg_sq(max_sq);
      state_map[key] = std::move(state);
    }
  } else if (entries.count("momentum_buffer")) {
    auto state = std::make_unique<torch::optim::SGDParamState>();
    state->momentum_buffer(on_device(entries.at("momentum_buffer")));
    state_map[key] = std::move(state);
  }
}

ordered_json scheduler_state_json(const LrScheduler& scheduler, const Optimizer& optimizer) {
  ordered_json base = ordered_json::array(), last = ordered_json::array(), lambdas = ordered_json::array();
  for (std::size_t g = 0; g < optimizer.num_groups(); ++g) {
    base.push_back(optimizer.initial_lr(g));
    last.push_back(optimizer.lr(g));
    lambdas.push_back(nullptr);
  }
  ordered_json state;
  state["base_lrs"] = base;
  state["last_epoch"] = scheduler.last_step();
  state["_step_count"] = scheduler.last_step() + 1;
  state["_is_initial"] = false;
  state["_get_lr_called_within_step"] = false;
  state["_last_lr"] = last;
  state["lr_lambdas"] = lambdas;
  return state;
}

void save_scheduler_state(const LrScheduler& scheduler, const Optimizer& optimizer, const fs::path& dir) {
  io::write_file_atomic(dir / kSchedulerStateFile, scheduler_state_json(scheduler, optimizer).dump(4));
}

void load_scheduler_state(LrScheduler& scheduler, const Optimizer& optimizer, const fs::path& dir) {
  const fs::path file = dir / kSchedulerStateFile;
  ordered_json saved = parse_json_file(file);
  ordered_json current = scheduler_state_json(scheduler, optimizer);
  if (!saved.is_object()) throw util::DataError(file.string() + ": expected an object (LambdaLR.state_dict())");
  for (const auto& [key, value] : current.items())
    if (!saved.contains(key)) throw util::DataError(file.string() + ": missing key '" + key + "'");
  if (!saved["last_epoch"].is_number_integer() || saved["last_epoch"].get<int64_t>() < 0)
    throw util::DataError(file.string() + ": 'last_epoch' must be an integer >= 0, got " + saved["last_epoch"].dump());
  if (!saved["base_lrs"].is_array() || saved["base_lrs"].size() != optimizer.num_groups())
    throw util::DataError(file.string() + ": 'base_lrs' must list " + std::to_string(optimizer.num_groups()) +
                          " learning rate(s), got " + saved["base_lrs"].dump());
  scheduler.set_step(saved["last_epoch"].get<int64_t>());
}

}  // namespace lrhost::optim
