// The EMA of the trainable weights; see weight_ema.hpp.
#include "host/optim/weight_ema.hpp"

#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include <set>

#include "host/util/error.hpp"

namespace lrhost::optim {
namespace {

constexpr int kStateFormat = 1;
constexpr int64_t kChunkBytes = int64_t{64} << 20;

// One pass over a CPU tensor's elements with the three roundings of `s - (1 - d) * (s - p)` in their
// order: separate float operations, never contracted into a fused multiply-add, so the result is the
// foreach kernels' (and diffusers') bit for bit, without their temporary and two more passes.
template <typename Param>
void update_in_one_pass(float* shadow, const Param* param, int64_t n, float weight) {
  at::parallel_for(0, n, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    for (int64_t i = begin; i < end; ++i) {
      const float difference = shadow[i] - static_cast<float>(param[i]);
      const float step = difference * weight;
      shadow[i] = shadow[i] - step;
    }
  });
}

// Whether update_in_one_pass takes this pair: CPU, contiguous, an fp32 shadow of an fp32 or bf16 weight.
bool one_pass(const torch::Tensor& shadow, const torch::Tensor& param) {
  return shadow.device().is_cpu() && param.device().is_cpu() && shadow.is_contiguous() && param.is_contiguous() &&
         (param.scalar_type() == torch::kFloat32 || param.scalar_type() == torch::kBFloat16);
}

}  // namespace

WeightEma::WeightEma(EmaSettings settings, std::vector<std::pair<std::string, torch::Tensor>> tracked)
    : settings_(std::move(settings)), params_(std::move(tracked)) {
  torch::NoGradGuard no_grad;
  std::set<std::string> names;
  for (const auto& [name, param] : params_) {
    if (!param.defined() || !param.is_floating_point())
      throw util::ConfigError("ema: '" + name + "' is not a floating-point parameter");
    if (!names.insert(name).second) throw util::ConfigError("ema: '" + name + "' is tracked twice");
    shadows_.emplace_back(name, param.detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true));
  }
}

void WeightEma::update() {
  if (swapped_) throw util::ConfigError("ema: an update while the EMA weights are swapped in (call swap_out first)");
  ++optimization_step_;
  last_decay_ = ema_decay(settings_, optimization_step_);
  const double one_minus_decay = 1.0 - last_decay_;
  torch::NoGradGuard no_grad;
  // Chunks of one parameter dtype (shadows are all fp32), so every foreach kernel sees one dtype.
  std::vector<torch::Tensor> shadows, params;
  int64_t bytes = 0;
  auto flush = [&] {
    if (shadows.empty()) return;
    auto differences = at::_foreach_sub(shadows, params);  // shadow - param
    at::_foreach_mul_(differences, one_minus_decay);       // (1 - decay) * (shadow - param)
    at::_foreach_sub_(shadows, differences);
    shadows.clear();
    params.clear();
    bytes = 0;
  };
  // The scalar as the foreach multiply (and PyTorch's tensor * float) applies it to fp32 values.
  const auto weight = static_cast<float>(one_minus_decay);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& param = params_[i].second;
    auto& shadow = shadows_[i].second;
    if (one_pass(shadow, param)) {
      if (param.scalar_type() == torch::kFloat32)
        update_in_one_pass(shadow.data_ptr<float>(), param.data_ptr<float>(), shadow.numel(), weight);
      else
        update_in_one_pass(shadow.data_ptr<float>(), param.data_ptr<c10::BFloat16>(), shadow.numel(), weight);
      continue;
    }
    if (!params.empty() && (params.back().scalar_type() != param.scalar_type() || bytes >= kChunkBytes)) flush();
    shadows.push_back(shadows_[i].second);
    params.push_back(param.detach());
    bytes += static_cast<int64_t>(shadows_[i].second.nbytes());
  }
  flush();
}

torch::Tensor WeightEma::shadow(const std::string& name) const {
  for (const auto& [tracked, shadow] : shadows_)
    if (tracked == name) return shadow;
  throw util::ConfigError("ema: '" + name + "' is not a tracked parameter");
}

int64_t WeightEma::shadow_bytes() const {
  int64_t total = 0;
  for (const auto& [name, shadow] : shadows_) total += static_cast<int64_t>(shadow.nbytes());
  return total;
}

void WeightEma::swap_in() {
  if (swapped_) throw util::ConfigError("ema: the EMA weights are swapped in already");
  torch::NoGradGuard no_grad;
  stash_.assign(params_.size(), torch::Tensor());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto param = params_[i].second.detach();
    auto& shadow = shadows_[i].second;
    auto live = param.clone();
    param.copy_(shadow);
    if (param.scalar_type() == shadow.scalar_type())
      shadow.copy_(live);  // an exchange: the shadow holds the live values until swap_out
    else
      stash_[i] = std::move(live);
  }
  swapped_ = true;
}

void WeightEma::swap_out() {
  if (!swapped_) throw util::ConfigError("ema: swap_out without swap_in");
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto param = params_[i].second.detach();
    auto& shadow = shadows_[i].second;
    if (stash_[i].defined()) {
      param.copy_(stash_[i]);
    } else {
      auto ema = param.clone();
      param.copy_(shadow);
      shadow.copy_(ema);
    }
  }
  stash_.clear();
  swapped_ = false;
}

nlohmann::ordered_json WeightEma::state_json() const {
  return {{"format", kStateFormat},
          {"optimization_step", optimization_step_},
          {"cur_decay_value", last_decay_},
          {"tracked", static_cast<int64_t>(shadows_.size())},
          {"settings", settings_.to_json()}};
}

void WeightEma::load_step(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object() || json.value("format", 0) != kStateFormat || !json.contains("optimization_step") ||
      !json["optimization_step"].is_number_integer() || json["optimization_step"].get<int64_t>() < 0)
    throw util::DataError(where + ": not an lrhost EMA state (format " + std::to_string(kStateFormat) +
                          " with an integer optimization_step >= 0)");
  optimization_step_ = json["optimization_step"].get<int64_t>();
  last_decay_ = json.value("cur_decay_value", 0.0);
  if (json.contains("settings") && json["settings"] != nlohmann::json::parse(settings_.to_json().dump()))
    spdlog::info("ema: the checkpoint's settings {} differ from this run's {}; the run's apply from here on",
                 json["settings"].dump(), settings_.to_json().dump());
}

void WeightEma::load_shadows(const std::map<std::string, torch::Tensor>& shadows, const std::string& where) {
  if (swapped_) throw util::ConfigError("ema: loading shadows while the EMA weights are swapped in");
  std::vector<std::string> missing, unexpected;
  std::set<std::string> tracked;
  for (const auto& [name, shadow] : shadows_) {
    tracked.insert(name);
    if (!shadows.count(name)) missing.push_back(name);
  }
  for (const auto& [name, tensor] : shadows)
    if (!tracked.count(name)) unexpected.push_back(name);
  auto list = [](const std::vector<std::string>& names) {
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < 5; ++i) text += (i ? ", '" : "'") + names[i] + "'";
    return names.size() > 5 ? text + ", ..." : text;
  };
  if (!missing.empty() || !unexpected.empty())
    throw util::DataError(where + ": the EMA shadows do not match the trained parameters (" +
                              (missing.empty() ? "" : "missing " + list(missing)) +
                              (missing.empty() || unexpected.empty() ? "" : "; ") +
                              (unexpected.empty() ? "" : "unexpected " + list(unexpected)) + ")",
                          "resume with the policy and adapters the checkpoint was trained with");
  for (const auto& [name, shadow] : shadows_) {
    const auto& saved = shadows.at(name);
    if (saved.sizes() != shadow.sizes())
      throw util::DataError(where + ": the EMA shadow of '" + name + "' is " + c10::str(saved.sizes()) +
                            ", the parameter is " + c10::str(shadow.sizes()));
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, shadow] : shadows_) shadow.copy_(shadows.at(name));
}

void WeightEma::reset_to_parameters() {
  if (swapped_) throw util::ConfigError("ema: reset while the EMA weights are swapped in");
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) shadows_[i].second.copy_(params_[i].second.detach());
  optimization_step_ = 0;
  last_decay_ = 0;
}

std::shared_ptr<WeightEma> attach_weight_ema(const EmaSettings& settings,
                                             const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                             Optimizer& optimizer, bool sharded, bool main_process) {
  if (!settings.enable) throw util::ConfigError("lr.optim.ema: ema.enable is false", "set ema.enable=true");
  if (settings.on_main_only && sharded)
    throw util::ConfigError("ema.on_main_only = true under FSDP: each rank holds only its shards of the weights",
                            "leave ema.on_main_only=false: each rank then averages its own shards");
  if (settings.on_main_only && !main_process) return nullptr;
  std::set<const torch::TensorImpl*> trained;
  for (const auto& param : optimizer.parameters()) trained.insert(param.unsafeGetTensorImpl());
  std::vector<std::pair<std::string, torch::Tensor>> tracked;
  for (const auto& [name, param] : named)
    if (trained.count(param.unsafeGetTensorImpl())) tracked.emplace_back(name, param);
  if (tracked.empty())
    throw util::ConfigError("lr.optim.ema: the optimizer trains none of the policy's parameters",
                            "call it after acc:prepare(policy, optimizer)");
  auto ema = std::make_shared<WeightEma>(settings, std::move(tracked));
  std::weak_ptr<WeightEma> held = ema;  // the optimizer does not keep the EMA alive
  optimizer.add_after_step([held] {
    if (auto live = held.lock()) live->update();
  });
  return ema;
}

}  // namespace lrhost::optim
