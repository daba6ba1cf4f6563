// Unit tests of host/config/overrides: parsing key=value, type conversion against defaults,
// unknown keys with suggestions, nested tables and lists.
#include <doctest/doctest.h>

#include <set>

#include "host/config/overrides.hpp"
#include "host/util/error.hpp"

using lrhost::config::apply_overrides;
using lrhost::config::parse_override;
using lrhost::util::ConfigError;
using nlohmann::json;

namespace {
json defaults() {
  return json{{"steps", 100},
              {"batch_size", 8},
              {"name", "run"},
              {"resume", false},
              {"optimizer", {{"lr", 1e-5}, {"betas", {0.9, 0.999}}}},
              {"policy", {{"hidden_dims", {64, 64}}, {"type", "mlp"}}}};
}
json apply(std::initializer_list<const char*> args) {
  std::vector<lrhost::config::Override> overrides;
  for (const char* arg : args) overrides.push_back(parse_override(arg));
  return apply_overrides(defaults(), overrides);
}
std::string error_of(std::initializer_list<const char*> args) {
  try {
    apply(args);
  } catch (const ConfigError& e) {
    return lrhost::util::describe(e);
  }
  return "";
}
}  // namespace

TEST_CASE("parse_override splits key and value") {
  auto o = parse_override("optimizer.lr=2e-5");
  CHECK(o.key == "optimizer.lr");
  CHECK(o.value == "2e-5");
  CHECK(parse_override("name=a=b").value == "a=b");
  CHECK(parse_override("name=").value.empty());
  CHECK_THROWS_AS(parse_override("steps"), ConfigError);
  CHECK_THROWS_AS(parse_override("=3"), ConfigError);
  CHECK_THROWS_AS(parse_override("a..b=3"), ConfigError);
  CHECK_THROWS_AS(parse_override("a.=3"), ConfigError);
}

TEST_CASE("values are converted to the type of their default") {
  auto c = apply({"steps=2000", "optimizer.lr=2e-5", "name=exp1", "resume=true", "batch_size=1e2"});
  CHECK(c["steps"] == 2000);
  CHECK(c["steps"].is_number_integer());
  CHECK(c["optimizer"]["lr"].get<double>() == doctest::Approx(2e-5));
  CHECK(c["name"] == "exp1");
  CHECK(c["resume"] == true);
  CHECK(c["batch_size"] == 100);
  // Untouched keys keep their defaults.
  CHECK(c["policy"]["type"] == "mlp");
  CHECK(c["optimizer"]["betas"] == json({0.9, 0.999}));
}

TEST_CASE("later overrides win") {
  CHECK(apply({"steps=1", "steps=2"})["steps"] == 2);
}

TEST_CASE("wrong types are rejected with key, expected type and given text") {
  CHECK(error_of({"steps=many"}).find("config key 'steps' expects a number (default 100), got 'many'") !=
        std::string::npos);
  CHECK(error_of({"resume=yes"}).find("expects a boolean") != std::string::npos);
  CHECK(error_of({"steps=nan"}).find("expects a number") != std::string::npos);
  CHECK(error_of({"steps=1e999"}).find("expects a number") != std::string::npos);
  CHECK(error_of({"optimizer.betas=0.9"}).find("expects a list") != std::string::npos);
  CHECK(error_of({"optimizer.betas=[\"a\"]"}).find("list of numbers") != std::string::npos);
  CHECK(error_of({"optimizer=3"}).find("expects a table") != std::string::npos);
}

TEST_CASE("unknown keys list the nearest valid keys") {
  auto message = error_of({"optimizer.lrr=1"});
  CHECK(message.find("unknown config key 'optimizer.lrr'") != std::string::npos);
  CHECK(message.find("did you mean 'optimizer.lr'") != std::string::npos);
  CHECK(error_of({"stesp=3"}).find("'steps'") != std::string::npos);
  CHECK(error_of({"completely_unrelated_thing=3"}).find("lrhost show") != std::string::npos);
  CHECK(error_of({"steps.x=3"}).find("'steps' is a number, it has no field 'x'") != std::string::npos);
}

TEST_CASE("suggestions search leaf names and flattened paths across all keys") {
  using lrhost::config::suggest_keys;
  // ACT's layout: the learning rate lives at policy.optimizer_lr, the optimizer table holds clipping.
  const json act = {{"steps", 100},
                    {"optimizer", {{"grad_clip_norm", 10.0}}},
                    {"policy",
                     {{"optimizer_lr", 1e-5},
                      {"optimizer_lr_backbone", 1e-5},
                      {"optimizer_weight_decay", 1e-4},
                      {"dim_model", 512},
                      {"n_heads", 8}}},
                    {"scheduler", {{"lr", 0.1}}}};
  auto paths = lrhost::config::key_paths(act);
  // same words nested differently, ranked before the leaf found elsewhere and the table above the key
  CHECK(suggest_keys("optimizer.lr", paths) ==
        std::vector<std::string>{"policy.optimizer_lr", "scheduler.lr", "policy.optimizer_lr_backbone"});
  // a bare leaf: exact leaf first, then leaves that hold it as a word (shorter first)
  CHECK(suggest_keys("lr", paths) ==
        std::vector<std::string>{"scheduler.lr", "policy.optimizer_lr", "policy.optimizer_lr_backbone"});
  CHECK(suggest_keys("lr", paths, 1) == std::vector<std::string>{"scheduler.lr"});
  // a typo of a leaf under the wrong table
  CHECK(suggest_keys("model.dim_modle", paths).front() == "policy.dim_model");
  CHECK(suggest_keys("weight_decay", paths).front() == "policy.optimizer_weight_decay");
  // typos of the whole path still come first
  CHECK(suggest_keys("polcy.n_heads", paths).front() == "policy.n_heads");
  // a word inside another word is no match ("lr" is not in "clr"), nor is anything for unrelated keys
  CHECK(suggest_keys("clr", {"policy.optimizer_lr"}).empty());
  CHECK(suggest_keys("completely_unrelated_thing", paths).empty());

  // through apply_overrides: the hint names policy.optimizer_lr
  std::string message;
  try {
    apply_overrides(act, {parse_override("optimizer.lr=1")});
  } catch (const ConfigError& e) {
    message = lrhost::util::describe(e);
  }
  CHECK(message.find("unknown config key 'optimizer.lr'") != std::string::npos);
  CHECK(message.find("did you mean 'policy.optimizer_lr'") != std::string::npos);
}

TEST_CASE("lists and tables take JSON values, checked against the defaults") {
  auto c = apply({"policy.hidden_dims=[128,32,8]", "optimizer={\"lr\": 0.1}"});
  CHECK(c["policy"]["hidden_dims"] == json({128, 32, 8}));
  CHECK(c["optimizer"]["lr"].get<double>() == doctest::Approx(0.1));
  CHECK(c["optimizer"]["betas"] == json({0.9, 0.999}));  // merged, not replaced
  CHECK(error_of({"optimizer={\"lrr\": 0.1}"}).find("unknown config key 'optimizer.lrr'") != std::string::npos);
  CHECK(error_of({"optimizer={\"lr\": \"big\"}"}).find("expects a number") != std::string::npos);
  CHECK(error_of({"policy.hidden_dims=[1,"}).find("written as JSON") != std::string::npos);
}

TEST_CASE("key_paths lists tables and leaves") {
  auto paths = lrhost::config::key_paths(defaults());
  CHECK(std::find(paths.begin(), paths.end(), "optimizer.lr") != paths.end());
  CHECK(std::find(paths.begin(), paths.end(), "policy") != paths.end());
}

TEST_CASE("a table declared as a map takes any keys, given whole as a JSON object") {
  json base = defaults();
  base["rename_map"] = json::object();
  const std::set<std::string> maps{"rename_map"};
  auto run = [&](std::initializer_list<const char*> args) {
    std::vector<lrhost::config::Override> overrides;
    for (const char* arg : args) overrides.push_back(parse_override(arg));
    return apply_overrides(base, overrides, maps);
  };
  auto message = [&](std::initializer_list<const char*> args) {
    try {
      run(args);
    } catch (const ConfigError& e) {
      return lrhost::util::describe(e);
    }
    return std::string("no error");
  };
  auto c = run({R"(rename_map={"observation.images.top": "observation.images.camera1"})"});
  CHECK(c["rename_map"] == json{{"observation.images.top", "observation.images.camera1"}});
  // A later map replaces the earlier one (LeRobot's --rename_map is one dict), and {} empties it.
  c = run({R"(rename_map={"a": "b"})", R"(rename_map={"c": "d"})"});
  CHECK(c["rename_map"] == json{{"c", "d"}});
  CHECK(run({"rename_map={}"})["rename_map"] == json::object());
  CHECK(message({"rename_map=[1]"}).find("expects a map (a JSON object") != std::string::npos);
  CHECK(message({"rename_map=top"}).find("expects a map written as a JSON object") != std::string::npos);
  CHECK(message({R"(rename_map={"a": {"b": 1}})"}).find("'a' maps to {\"b\":1}") != std::string::npos);
  CHECK(message({"rename_map.top=camera1"}).find("'rename_map' is a map: give it whole") != std::string::npos);
  // Without the declaration the same empty default is an empty list, as before.
  std::vector<lrhost::config::Override> as_list{parse_override(R"(rename_map={"a": "b"})")};
  CHECK_THROWS_AS(apply_overrides(base, as_list), ConfigError);
  // A map with values fixes their type.
  base["rename_map"] = json{{"x", "y"}};
  CHECK(message({R"(rename_map={"a": 3})"}).find("maps keys to strings") != std::string::npos);
}
