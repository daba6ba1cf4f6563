// Shared parts of the policy interface.
#include "host/policy/policy.hpp"

#include "host/config/config_reader.hpp"
#include "host/data/dataset_meta.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

// The tensors FSDP's root hooks look at: the loss and every part.
static void collect_outputs(const PolicyOutput& output, std::vector<torch::Tensor>& out) {
  out.push_back(output.loss);
  for (const auto& [name, tensor] : output.parts) out.push_back(tensor);
}

void Policy::add_file_cast(const torch::Tensor& param, torch::Tensor file_tensor) {
  file_casts_[param.unsafeGetTensorImpl()] = {param, std::move(file_tensor)};
}

torch::Tensor Policy::take_file_cast(const torch::Tensor& param) {
  auto found = file_casts_.find(param.unsafeGetTensorImpl());
  if (found == file_casts_.end()) return {};
  auto source = std::move(found->second.second);
  file_casts_.erase(found);
  return source;
}

void Policy::materialize_file_casts() {
  torch::NoGradGuard no_grad;
  while (!file_casts_.empty()) {
    auto [param, source] = std::move(file_casts_.begin()->second);
    file_casts_.erase(file_casts_.begin());
    param.set_data(source.to(param.scalar_type()));
  }
}

PolicyOutput Policy::run(const Batch& batch) {
  materialize_file_casts();
  PolicyOutput out;
  {
    nn::AutocastGuard autocast(autocast_);
    out = nn::hooked_forward(*this, [&] { return forward(batch); });
  }
  if (out.loss.defined() && out.loss.scalar_type() != torch::kFloat32) out.loss = out.loss.to(torch::kFloat32);
  return out;
}

torch::Tensor Policy::run_select_action(const Batch& batch) {
  materialize_file_casts();
  torch::NoGradGuard no_grad;
  nn::AutocastGuard autocast(inference_autocast());
  return nn::hooked_forward(*this, [&] { return select_action(batch); });
}

torch::Tensor Policy::run_predict_action_chunk(const Batch& batch) {
  materialize_file_casts();
  torch::NoGradGuard no_grad;
  nn::AutocastGuard autocast(inference_autocast());
  return nn::hooked_forward(*this, [&] { return predict_action_chunk(batch); });
}

std::optional<nn::AutocastSpec> Policy::inference_autocast() const {
  // LeRobot evaluates without autocast (lerobot-eval's use_amp is off), and so does lrhost — except on
  // an FSDP-sharded policy under mixed precision, whose gathered parameters are in the reduced dtype:
  // there the training autocast makes fp32 inputs meet them.
  return is_sharded() ? autocast_ : std::nullopt;
}

std::vector<std::string> Policy::fsdp_wrap_module_types() const {
  const auto* spec = find_policy_spec(type());
  return spec ? spec->fsdp_wrap_module_types : std::vector<std::string>{};
}

TrainingContext TrainingContext::read(const nlohmann::json& options, const std::optional<DatasetFacts>& from_dataset,
                                      const std::string& where) {
  config::ConfigReader reader(options, where);
  TrainingContext context;
  if (from_dataset) {
    context.num_frames = from_dataset->num_frames;
    context.dataset_id = from_dataset->id;
  }
  context.cache_dir = reader.string("cache_dir", "");
  context.augmentation = reader.boolean("augmentation", false);
  if (auto frames = reader.optional_integer("num_frames")) context.num_frames = *frames;
  context.dataset_id = reader.string("dataset_id", context.dataset_id);
  reader.reject_unknown();
  return context;
}

std::string Policy::fsdp_gather_group(const std::string& unit_path) const {
  const auto* spec = find_policy_spec(type());
  return spec && spec->fsdp_gather_group ? spec->fsdp_gather_group(unit_path) : unit_path;
}

std::vector<ParamGroup> Policy::param_groups() const {
  return {ParamGroup{"default", trainable_parameters(), std::nullopt, std::nullopt}};
}

std::vector<torch::Tensor> Policy::trainable_parameters() const {
  std::vector<torch::Tensor> result;
  for (const auto& p : parameters())
    if (p.requires_grad()) result.push_back(p);
  return result;
}

int64_t Policy::num_parameters() const {
  if (sharded_ != nullptr) return sharded_->num_parameters();
  int64_t total = 0;
  for (const auto& p : parameters()) total += p.numel();
  return total;
}

const torch::Tensor& require_input(const Batch& batch, const std::string& key, const std::string& policy_type) {
  auto found = batch.find(key);
  if (found != batch.end()) return found->second;
  std::string present;
  for (const auto& [name, tensor] : batch) present += (present.empty() ? "'" : ", '") + name + "'";
  throw util::ConfigError(policy_type + " policy: the batch has no '" + key + "' (it has " +
                          (present.empty() ? "no keys" : present) + ")");
}

torch::Tensor Policy::select_action(const Batch&) {
  throw util::NotImplemented("policy '" + type() + "' has no select_action yet");
}

torch::Tensor Policy::predict_action_chunk(const Batch&) {
  throw util::NotImplemented("policy '" + type() + "' predicts single actions; it has no predict_action_chunk");
}

nlohmann::ordered_json Policy::optimizer_preset() const {
  return {{"type", "adamw"},       {"lr", 1e-3},  {"weight_decay", 1e-2},
          {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"grad_clip_norm", 10.0}};
}

std::vector<std::pair<std::string, torch::Tensor>> Policy::state_dict() const {
  if (sharded_ != nullptr) return sharded_->full_state_dict();
  std::vector<std::pair<std::string, torch::Tensor>> entries;
  for (const auto& item : named_parameters()) {
    // A parameter still standing for a file tensor of another dtype: its values, cast.
    auto pending = file_casts_.find(item.value().unsafeGetTensorImpl());
    entries.emplace_back(item.key(), pending == file_casts_.end()
                                         ? item.value()
                                         : pending->second.second.to(item.value().scalar_type()));
  }
  for (const auto& item : named_buffers()) entries.emplace_back(item.key(), item.value());
  return entries;
}

std::string module_type_name(const torch::nn::Module& module) {
  std::string name = module.name();
  auto colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

}  // namespace lrhost::policy
