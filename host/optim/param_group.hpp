// One optimizer parameter group, as a policy hands its parameters out (Policy::param_groups, LeRobot's
// get_optim_params) and an optimizer takes them: torch.optim's param_groups entry with the options a
// group may set. Unset fields inherit the optimizer's options.
#pragma once
#include <torch/torch.h>

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

}  // namespace lrhost::optim
