// Construction of LibTorch optimizers from recipe options and parameter groups.
#include "host/optim/optimizer.hpp"

#include "host/config/config_reader.hpp"
#include "host/optim/fused_adam.hpp"
#include "host/optim/grad_clip.hpp"
#include "host/util/error.hpp"

namespace lrhost::optim {

namespace {

std::tuple<double, double> read_betas(config::ConfigReader& reader, const std::string& where) {
  auto betas = reader.number_list("betas", {0.9, 0.999});
  if (betas.size() != 2 || betas[0] < 0 || betas[0] >= 1 || betas[1] < 0 || betas[1] >= 1)
    throw util::ConfigError(where + ": 'betas' must be two numbers in [0, 1)");
  return {betas[0], betas[1]};
}

template <class Options>
std::unique_ptr<Options> group_options(const Options& base, const ParamGroup& group) {
  auto options = std::make_unique<Options>(base);
  if (group.lr) options->lr(*group.lr);
  if (group.weight_decay) options->weight_decay(*group.weight_decay);
  return options;
}

template <class TorchOptimizer, class Options>
std::unique_ptr<torch::optim::Optimizer> build(const Options& base, std::vector<ParamGroup>& groups) {
  std::vector<torch::optim::OptimizerParamGroup> torch_groups;
  for (auto& group : groups) torch_groups.emplace_back(group.params, group_options(base, group));
  return std::make_unique<TorchOptimizer>(std::move(torch_groups), base);
}

}  // namespace

Optimizer::Optimizer(const std::string& kind, std::vector<ParamGroup> groups, const nlohmann::json& options,
                     const std::vector<std::string>& ignored_keys)
    : kind_(kOptimizerKindNames.parse(kind, "optimizer")) {
  const std::string where = "optimizer '" + kind + "'";
  if (groups.empty()) throw util::ConfigError(where + ": no parameter groups given");
  for (const auto& group : groups)
    if (group.params.empty())
      throw util::ConfigError(where + ": parameter group '" + group.name + "' has no parameters");
  config::ConfigReader reader(options, where);
  for (const auto& key : ignored_keys) reader.allow(key);
  double base_lr = reader.positive_number("lr", 1e-3);
  double weight_decay = reader.number("weight_decay", kind_ == OptimizerKind::adamw ? 1e-2 : 0.0);
  if (weight_decay < 0) throw util::ConfigError(where + ": 'weight_decay' must be >= 0");
  if (is_adam_family(kind_)) {
    auto betas = read_betas(reader, where);
    double eps = reader.positive_number("eps", 1e-8);
    bool amsgrad = reader.boolean("amsgrad", false);
    fused_ = reader.boolean("fused", true);
    reader.reject_unknown();
    if (kind_ == OptimizerKind::adamw) {
      torch::optim::AdamWOptions base(base_lr);
      base.betas(betas).eps(eps).weight_decay(weight_decay).amsgrad(amsgrad);
      torch_ = build<torch::optim::AdamW>(base, groups);
    } else {
      torch::optim::AdamOptions base(base_lr);
      base.betas(betas).eps(eps).weight_decay(weight_decay).amsgrad(amsgrad);
      torch_ = build<torch::optim::Adam>(base, groups);
    }
  } else {
    double momentum = reader.number("momentum", 0.0);
    double dampening = reader.number("dampening", 0.0);
    bool nesterov = reader.boolean("nesterov", false);
    reader.reject_unknown();
    if (nesterov && (momentum <= 0 || dampening != 0))
      throw util::ConfigError(where + ": nesterov needs momentum > 0 and dampening = 0");
    torch::optim::SGDOptions base(base_lr);
    base.momentum(momentum).dampening(dampening).weight_decay(weight_decay).nesterov(nesterov);
    torch_ = build<torch::optim::SGD>(base, groups);
  }
  for (std::size_t g = 0; g < num_groups(); ++g) initial_lrs_.push_back(lr(g));
}

bool Optimizer::step() {
  for (auto& ready : pending_reads_) ready.wait();
  pending_reads_.clear();
  if (before_step_ && !before_step_(*this)) return false;
  if (!is_adam_family(kind_) || !fused_ || !fused_adam_step(*torch_, kind_ == OptimizerKind::adamw)) torch_->step();
  ++applied_steps_;
  for (const auto& callback : after_step_) callback();
  return true;
}

void Optimizer::note_captured_step() {
  ++applied_steps_;
  for (const auto& callback : after_step_) callback();
}

void Optimizer::zero_grad() {
  if (allow_zero_grad_ && !allow_zero_grad_()) return;
  torch_->zero_grad(/*set_to_none=*/true);
}

void Optimizer::set_step_hooks(std::function<bool(Optimizer&)> before_step, std::function<bool()> allow_zero_grad) {
  before_step_ = std::move(before_step);
  allow_zero_grad_ = std::move(allow_zero_grad);
}

double Optimizer::clip_grad_norm(double max_norm) {
  return optim::clip_grad_norm(parameters(), max_norm);
}

void Optimizer::check_group(std::size_t group) const {
  if (group >= num_groups())
    throw util::ConfigError("optimizer has " + std::to_string(num_groups()) + " parameter group(s); group " +
                            std::to_string(group + 1) + " does not exist");
}

double Optimizer::lr(std::size_t group) const {
  check_group(group);
  return torch_->param_groups()[group].options().get_lr();
}

void Optimizer::set_lr(std::size_t group, double lr) {
  check_group(group);
  torch_->param_groups()[group].options().set_lr(lr);
}

std::vector<torch::Tensor> Optimizer::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& group : torch_->param_groups()) all.insert(all.end(), group.params().begin(), group.params().end());
  return all;
}

int64_t Optimizer::state_bytes() const {
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  };
  int64_t total = 0;
  for (const auto& [key, state] : torch_->state()) {
    if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(state.get()))
      total += bytes(adam->exp_avg()) + bytes(adam->exp_avg_sq()) + bytes(adam->max_exp_avg_sq());
    else if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(state.get()))
      total += bytes(adamw->exp_avg()) + bytes(adamw->exp_avg_sq()) + bytes(adamw->max_exp_avg_sq());
    else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(state.get()))
      total += bytes(sgd->momentum_buffer());
  }
  return total;
}

}  // namespace lrhost::optim
