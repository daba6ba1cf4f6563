// A parameter group from a recipe's options table; see param_group.hpp.
#include "host/optim/param_group.hpp"

#include "host/config/config_reader.hpp"

namespace lrhost::optim {

ParamGroup read_param_group(const nlohmann::json& options, std::vector<torch::Tensor> params, const std::string& where,
                            const std::string& default_name) {
  config::ConfigReader reader(options, where);
  ParamGroup group;
  group.name = reader.string("name", default_name);
  reader.allow("params");  // the tensors, passed as `params`
  group.lr = reader.optional_number("lr");
  group.weight_decay = reader.optional_number("weight_decay");
  reader.reject_unknown();
  group.params = std::move(params);
  return group;
}

}  // namespace lrhost::optim
