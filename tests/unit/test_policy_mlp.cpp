// Unit tests of host/policy: the registry and the mlp policy (config, shapes, loss, errors).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/data/dataset_meta.hpp"
#include "host/policy/mlp/mlp_policy.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using lrhost::policy::create_policy;
using lrhost::util::ConfigError;
using nlohmann::json;

namespace {
std::string error_of(const json& config) {
  try {
    create_policy(config);
  } catch (const ConfigError& e) {
    return lrhost::util::describe(e);
  }
  return "";
}
}  // namespace

TEST_CASE("the registry builds an mlp and rejects unknown types") {
  auto policy = create_policy({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}, {"hidden_dims", {4}}});
  CHECK(policy->type() == "mlp");
  // 3*4 + 4 + 4*2 + 2 parameters
  CHECK(policy->num_parameters() == 26);
  CHECK(error_of({{"type", "transformer"}}).find("unknown policy type 'transformer'") != std::string::npos);
  CHECK(error_of({{"type", "transformer"}}).find("'mlp'") != std::string::npos);
  CHECK(error_of({{"input_dim", 3}}).find("needs a string 'type'") != std::string::npos);
}

TEST_CASE("mlp config is validated strictly") {
  CHECK(error_of({{"type", "mlp"}, {"input_dim", 3}}).find("output_dim must be positive") != std::string::npos);
  CHECK(error_of({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 1}, {"hiden_dims", {4}}})
            .find("did you mean 'hidden_dims'") != std::string::npos);
  CHECK(error_of({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 1}, {"activation", "swish"}})
            .find("'activation' must be one of 'relu', 'gelu', 'tanh'") != std::string::npos);
  CHECK(error_of({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 1}, {"hidden_dims", {0}}})
            .find("hidden_dims must be positive") != std::string::npos);
  CHECK(error_of({{"type", "mlp"}, {"input_dim", 2.5}, {"output_dim", 1}}).find("must be an integer") !=
        std::string::npos);
}

TEST_CASE("mlp dims come from dataset features when not configured") {
  lrhost::policy::PolicyFeatures features;
  features.inputs.push_back({"observation.state", "STATE", {6}});
  features.outputs.push_back({"action", "ACTION", {2, 3}});
  auto policy = create_policy({{"type", "mlp"}, {"hidden_dims", json::array()}}, features);
  auto config = policy->config();
  CHECK(config["input_dim"] == 6);
  CHECK(config["output_dim"] == 6);
}

TEST_CASE("mlp forward gives the MSE loss of its prediction") {
  torch::manual_seed(0);
  auto policy =
      create_policy({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}, {"input_key", "x"}, {"target_key", "y"}});
  Batch batch{{"x", torch::randn({5, 3})}, {"y", torch::randn({5, 2})}};
  auto out = policy->forward(batch);
  auto expected = (out.parts.at("prediction") - batch["y"]).pow(2).mean();
  CHECK(out.loss.item<double>() == doctest::Approx(expected.item<double>()));
  out.loss.backward();
  for (const auto& p : policy->parameters()) CHECK(p.grad().defined());
  CHECK(policy->param_groups().size() == 1);
  CHECK(policy->param_groups()[0].params.size() == policy->parameters().size());
}

TEST_CASE("mlp forward names missing or mis-shaped batch entries") {
  auto policy = create_policy({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}});
  auto message = [&](const Batch& batch) {
    try {
      policy->forward(batch);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message({{"action", torch::zeros({1, 2})}}).find("no 'observation.state' (it has 'action')") !=
        std::string::npos);
  CHECK(message({{"observation.state", torch::zeros({1, 4})}, {"action", torch::zeros({1, 2})}})
            .find("expects input_dim = 3") != std::string::npos);
  CHECK(message({{"observation.state", torch::zeros({1, 3})}, {"action", torch::zeros({1, 5})}})
            .find("'action' has shape [1, 5]") != std::string::npos);
}

TEST_CASE("a policy without training capabilities: prepare_training keeps nothing, training_metrics is empty") {
  auto policy = create_policy({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}, {"hidden_dims", {4}}});
  lrhost::policy::TrainingContext context;
  context.cache_dir = "/nonexistent/lrhost/cache";  // never touched
  context.num_frames = 10;
  context.dataset_id = "test";
  context.augmentation = true;
  policy->prepare_training(context);
  CHECK(policy->training_metrics().empty());
  CHECK(!std::filesystem::exists(context.cache_dir));
}

TEST_CASE("training context: a recipe's prepare_training table, the dataset's facts overridable") {
  using lrhost::policy::TrainingContext;
  const TrainingContext::DatasetFacts meta{120, "/data/push"};
  auto from_dataset = TrainingContext::read({{"cache_dir", "/run/cache"}, {"augmentation", true}}, meta, "prep");
  CHECK(from_dataset.cache_dir == "/run/cache");
  CHECK(from_dataset.augmentation);
  CHECK(from_dataset.num_frames == 120);
  CHECK(from_dataset.dataset_id == "/data/push");
  auto given = TrainingContext::read({{"num_frames", 7}, {"dataset_id", "d"}}, meta, "prep");
  CHECK(given.num_frames == 7);
  CHECK(given.dataset_id == "d");
  CHECK_FALSE(given.augmentation);
  auto error = [](const nlohmann::json& table) {
    return lrhost::test::error_of<lrhost::util::ConfigError>(
        [&] { TrainingContext::read(table, std::nullopt, "prep"); });
  };
  CHECK(error({{"cach_dir", "x"}}).find("prep: unknown option 'cach_dir'") == 0);
  CHECK(error({{"augmentation", "yes"}}).find("prep: 'augmentation' must be true or false") == 0);
  CHECK(error({{"num_frames", 1.5}}).find("prep: 'num_frames' must be an integer") == 0);
}
