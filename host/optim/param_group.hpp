// One optimizer parameter group, as a policy hands its parameters out (Policy::param_groups, LeRobot's
// get_optim_params) and an optimizer takes them: torch.optim's param_groups entry with the options a
// group may set. Unset fields inherit the optimizer's options.
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::optim {

struct ParamGroup {
  std::string name;
  std::vector<torch::Tensor> params;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

// The group a recipe's table describes ({name =, params =, lr =, weight_decay =}): `options` is the
// table without its tensors (read_param_group ignores a 'params' key), `params` the tensors. Types
// are checked and unknown keys are ConfigErrors naming `where` (e.g. "optimizer groups[2]").
ParamGroup read_param_group(const nlohmann::json& options, std::vector<torch::Tensor> params, const std::string& where,
                            const std::string& default_name);

}  // namespace lrhost::optim
