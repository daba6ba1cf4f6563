// The `groot` policy's config, geometry, tuning switches, weight-decay groups, prompt and processor
// settings: LeRobot's rules and lrhost's refusals, on the tiny geometry shipped in
// recipes/assets/groot_tiny (LeRobot parity of the numbers is tests/interop/groot_folder_check.cpp's).
#include <doctest/doctest.h>

#include <filesystem>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/activation_checkpoint.hpp"
#include "host/policy/groot/groot_config.hpp"
#include "host/policy/groot/groot_geometry.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/policy/groot/groot_processor_steps.hpp"
#include "host/policy/groot/groot_prompt.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using lrhost::policy::groot::GrootConfig;
using lrhost::policy::groot::GrootPolicy;

fs::path groot_tiny() {
  return lrhost::util::shipped_asset_dir("lrhost/groot_tiny");
}

// A tiny GR00T table: the shipped geometry and tokenizer by path, a camera, state 3, action 2.
nlohmann::json tiny_table(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json table{{"type", "groot"},
                       {"geometry", groot_tiny().string()},
                       {"tokenizer_name", groot_tiny().string()},
                       {"chunk_size", 8},
                       {"n_action_steps", 8},
                       {"max_state_dim", 16},
                       {"max_action_dim", 16},
                       {"use_bf16", false},
                       {"input_features",
                        {{"observation.images.top", {{"type", "VISUAL"}, {"shape", {3, 32, 32}}}},
                         {"observation.state", {{"type", "STATE"}, {"shape", {3}}}}}},
                       {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {2}}}}}}};
  if (extra.is_object()) table.update(extra);
  return table;
}

// A base checkpoint's sidecars for embodiment libero_sim (state groups 2 + 1, action groups arm + gripper,
// percentiles, a valid horizon of 4 of the 8 steps, the one camera "top"), as LeRobot reads them.
constexpr const char* kStatsProcessorConfig = R"({"processor_kwargs": {"use_percentiles": true, "modality_configs":
  {"libero_sim": {"state": {"modality_keys": ["joints", "still"]},
                  "action": {"modality_keys": ["arm", "gripper"], "delta_indices": [0, 1, 2, 3],
                             "action_configs": [{"rep": "ABSOLUTE", "type": "NON_EEF"}, {"rep": "ABSOLUTE"}]},
                  "video": {"modality_keys": ["top"], "delta_indices": [0]}}}}})";
constexpr const char* kStatsStatistics = R"({"libero_sim": {
  "state": {"joints": {"min": [-5, -5], "max": [5, 5], "q01": [-1, -2], "q99": [1, 2], "mean": [0, 0], "std": [1, 1]},
            "still": {"min": [0.5], "max": [0.5], "q01": [0.5], "q99": [0.5], "mean": [0.5], "std": [0]}},
  "action": {"arm": {"min": [-9], "max": [9], "q01": [1], "q99": [4], "mean": [2], "std": [1]},
             "gripper": {"min": [0], "max": [1], "q01": [0.1], "q99": [0.9], "mean": [0.5], "std": [0.3]}}}})";

std::shared_ptr<GrootPolicy> tiny_policy(nlohmann::json extra = nlohmann::json::object()) {
  torch::manual_seed(0);
  return std::dynamic_pointer_cast<GrootPolicy>(lrhost::policy::create_policy(tiny_table(std::move(extra))));
}

std::set<std::string> trainable_prefixes(const GrootPolicy& policy, const std::vector<std::string>& prefixes) {
  std::set<std::string> out;
  for (const auto& item : policy.named_parameters())
    if (item.value().requires_grad())
      for (const auto& prefix : prefixes)
        if (item.key().rfind(prefix, 0) == 0) out.insert(prefix);
  return out;
}

// A processed batch for the tiny geometry: one camera (4 merged image tokens), the given prompt ids.
lrhost::policy::Batch processed_batch(int64_t rows) {
  torch::manual_seed(3);
  auto ids = torch::cat({torch::full({rows, 1}, 301L), torch::randint(0, 300, {rows, 2}), torch::full({rows, 1}, 303L),
                         torch::full({rows, 4}, 305L), torch::full({rows, 1}, 304L), torch::randint(0, 300, {rows, 3}),
                         torch::full({rows, 1}, 302L)},
                        1);
  auto mask = torch::zeros({rows, 8, 16});
  mask.narrow(2, 0, 2).fill_(1);
  return {{"input_ids", ids},
          {"attention_mask", torch::ones_like(ids)},
          {"pixel_values", torch::randn({rows, 16, 384})},
          {"image_grid_thw", torch::tensor({1L, 4L, 4L}).repeat({rows, 1, 1})},
          {"state", torch::rand({rows, 1, 16}) * 2 - 1},
          {"action", (torch::rand({rows, 8, 16}) * 2 - 1) * mask},
          {"action_mask", mask},
          {"embodiment_id", torch::full({rows}, 10, torch::kInt)}};
}

}  // namespace

TEST_CASE("groot config: LeRobot's defaults and order, its post-init rules, lrhost's refusals") {
  const auto defaults = GrootConfig{}.to_json();
  CHECK(defaults["type"] == "groot");
  CHECK(defaults["base_model_path"] == "nvidia/GR00T-N1.7-3B");
  CHECK(defaults["chunk_size"] == 40);
  CHECK(defaults["max_state_dim"] == 132);
  CHECK(defaults["optimizer_weight_decay"] == 1e-5);
  CHECK_FALSE(defaults.contains("geometry"));  // lrhost's own options stay out of config.json
  // Keys in LeRobot's dataclass order (the oracle's saved config.json lists them so).
  std::vector<std::string> keys;
  for (const auto& [key, value] : defaults.items()) keys.push_back(key);
  CHECK(std::find(keys.begin(), keys.end(), "tune_llm") < std::find(keys.begin(), keys.end(), "optimizer_lr"));
  CHECK(keys.back() == "resume");

  using lrhost::test::error_of;
  using lrhost::util::ConfigError;
  // "auto" resolves by embodiment; an unknown transform is refused.
  CHECK_FALSE(GrootConfig::from_json(tiny_table()).action_decode_transform.has_value());
  CHECK(GrootConfig::from_json(tiny_table({{"embodiment_tag", "libero_sim"}})).action_decode_transform == "libero");
  CHECK(lrhost::test::contains(error_of<ConfigError>([] {
                                 GrootConfig::from_json(tiny_table({{"action_decode_transform", "droid"}}));
                               }),
                               "action_decode_transform = 'droid': unsupported (supported: none, auto, libero)"));
  // The N1.5-era values LeRobot silently remaps, deprecated fields LeRobot ignores.
  CHECK(lrhost::test::contains(error_of<ConfigError>([] {
                                 GrootConfig::from_json(tiny_table({{"max_state_dim", 64}}));
                               }),
                               "max_state_dim = 64 is a GR00T N1.5-era default"));
  CHECK(lrhost::test::contains(error_of<ConfigError>([] {
                                 GrootConfig::from_json(tiny_table({{"lora_rank", 16}}));
                               }),
                               "'lora_rank' is deprecated in LeRobot 0.6.1's GrootConfig and ignored there"));
  CHECK(lrhost::test::contains(error_of<ConfigError>([] {
                                 GrootConfig::from_json(tiny_table({{"n_action_steps", 9}}));
                               }),
                               "n_action_steps (9) cannot exceed chunk_size (8)"));
  CHECK(lrhost::test::contains(error_of<ConfigError>([] {
                                 auto table = tiny_table();
                                 table["input_features"].erase("observation.images.top");
                                 GrootConfig::from_json(table);
                               }),
                               "GR00T needs at least one VISUAL input feature"));
  CHECK_THROWS_AS(GrootConfig::from_json(tiny_table({{"use_relative_actions", true}})), lrhost::util::NotImplemented);
  CHECK_THROWS_AS(GrootConfig::from_json(tiny_table({{"tokenizer_assets_repo", "x"}})), lrhost::util::Error);
  // validate_features adds a padded state / action when the features lack them.
  auto table = tiny_table();
  table["input_features"].erase("observation.state");
  CHECK(GrootConfig::from_json(table).robot_state_feature()->shape == std::vector<int64_t>{16});
  // LeRobot's warmup from the deprecated max_steps.
  CHECK(GrootConfig{}.warmup_steps() == 500);
}

TEST_CASE("groot geometry: the base checkpoint's config, Cosmos-Reason2's backbone, refused checkpoint features") {
  lrhost::test::TempDir scratch("groot_geometry");
  using lrhost::test::error_of;
  // No geometry and no base checkpoint: the error names base_model_path.
  CHECK(lrhost::test::contains(error_of<lrhost::util::ConfigError>([&] {
                                 auto c = GrootConfig::from_json(tiny_table({{"geometry", ""}}));
                                 c.base_model_path = (scratch.path / "missing").string();
                                 lrhost::policy::groot::resolve_geometry(c);
                               }),
                               "policy.base_model_path"));
  // A base checkpoint folder: its config.json with LeRobot's hard-coded Cosmos-Reason2-2B backbone.
  const fs::path base = scratch.path / "base";
  fs::create_directories(base);
  fs::copy_file(groot_tiny() / "config.json", base / "config.json");
  auto with_base = [&](nlohmann::json extra) {
    auto c = GrootConfig::from_json(tiny_table(extra));
    c.base_model_path = base.string();
    return c;
  };
  // The tiny head's width (64) is not Cosmos' 2048: the two configs disagree, by name.
  CHECK(lrhost::test::contains(error_of<lrhost::util::ConfigError>([&] {
                                 lrhost::policy::groot::resolve_geometry(with_base({{"geometry", ""}}));
                               }),
                               "backbone_embedding_dim (64) must equal the backbone's hidden_size (2048)"));
  CHECK(lrhost::policy::groot::cosmos_reason2_backbone_config()["text_config"]["num_hidden_layers"] == 28);
  // lr.policy.new's base weights: the base folder's model.safetensors, its absence named.
  {
    auto table = tiny_table();
    table["base_model_path"] = base.string();
    const auto& spec = lrhost::policy::policy_spec("groot");
    REQUIRE(static_cast<bool>(spec.base_weights));
    CHECK(lrhost::test::contains(error_of<lrhost::util::ConfigError>([&] { spec.base_weights(table, {}); }),
                                 "model.safetensors does not exist (GR00T's base weights)"));
    auto no_base = tiny_table();
    no_base["base_model_path"] = (scratch.path / "missing").string();
    CHECK_FALSE(spec.base_weights(no_base, {}).has_value());  // a tiny geometry without a base: from scratch
  }
  // The base's processor settings: read (image sizes), or refused (features lrhost does not port).
  lrhost::test::write_text(base / "processor_config.json",
                           R"({"processor_kwargs": {"image_target_size": [48, 48], "image_crop_size": [40, 40]}})");
  auto geometry = lrhost::policy::groot::resolve_geometry(with_base({}));
  CHECK(geometry.assets.image_target_size == std::vector<int64_t>{48, 48});
  CHECK(geometry.assets.image_crop_size == std::vector<int64_t>{40, 40});
  // max_action_horizon: the pack step's horizon, positive.
  lrhost::test::write_text(base / "processor_config.json", R"({"processor_kwargs": {"max_action_horizon": 8}})");
  CHECK(lrhost::policy::groot::resolve_geometry(with_base({})).assets.max_action_horizon == 8);
  lrhost::test::write_text(base / "processor_config.json", R"({"processor_kwargs": {"max_action_horizon": 0}})");
  CHECK(lrhost::test::contains(
      error_of<lrhost::util::ConfigError>([&] { lrhost::policy::groot::resolve_geometry(with_base({})); }),
      "max_action_horizon must be positive"));
  lrhost::test::write_text(base / "processor_config.json", R"({"processor_kwargs": {"use_albumentations": true}})");
  CHECK_THROWS_AS(lrhost::policy::groot::resolve_geometry(with_base({})), lrhost::util::NotImplemented);
  // The checkpoint's own statistics for the embodiment (both sidecars): parsed, with its layout.
  lrhost::test::write_text(base / "processor_config.json", kStatsProcessorConfig);
  lrhost::test::write_text(base / "statistics.json", kStatsStatistics);
  geometry = lrhost::policy::groot::resolve_geometry(with_base({{"embodiment_tag", "libero_sim"}}));
  REQUIRE(geometry.assets.checkpoint_stats.has_value());
  CHECK(geometry.assets.checkpoint_stats->state_dim() == 3);
  CHECK(geometry.assets.checkpoint_stats->use_percentiles);
  CHECK(geometry.assets.layout.valid_action_horizon == 4);
  CHECK(geometry.assets.layout.video_modality_keys == std::vector<std::string>{"top"});
  CHECK(geometry.assets.raw_stats.contains("state"));
  // Another tag of the same files: no statistics of its own, the dataset's are used.
  CHECK_FALSE(lrhost::policy::groot::resolve_geometry(with_base({})).assets.checkpoint_stats.has_value());
  // Modality groups named without their statistics: LeRobot's KeyError, here by name.
  lrhost::test::write_text(base / "statistics.json", R"({"other": {}})");
  CHECK(lrhost::test::contains(error_of<lrhost::util::ConfigError>([&] {
                                 lrhost::policy::groot::resolve_geometry(with_base({{"embodiment_tag", "libero_sim"}}));
                               }),
                               "no statistics for this group in statistics.json"));
  // A relative action group is refused loudly.
  std::string relative = kStatsProcessorConfig;
  relative.replace(relative.find("ABSOLUTE"), 8, "RELATIVE");
  lrhost::test::write_text(base / "processor_config.json", relative);
  lrhost::test::write_text(base / "statistics.json", kStatsStatistics);
  CHECK_THROWS_AS(lrhost::policy::groot::resolve_geometry(with_base({{"embodiment_tag", "libero_sim"}})),
                  lrhost::util::NotImplemented);
}

TEST_CASE("groot policy: a missing tokenizer is named when the processors need it, not when the policy is built") {
  // lrhost show builds GR00T's activation probes without a tokenizer.
  auto policy = tiny_policy({{"tokenizer_name", "/nonexistent/tokenizer"}});
  CHECK(lrhost::test::contains(lrhost::test::error_of<lrhost::util::ConfigError>(
                                   [&] { lrhost::policy::PolicyProcessors::for_policy(*policy, {}, {}); }),
                               "policy.tokenizer_name"));
}

TEST_CASE("groot processors with a base checkpoint's own statistics: pack, decode, files") {
  lrhost::test::TempDir scratch("groot_ckpt_stats");
  const fs::path base = scratch.path / "base";
  fs::create_directories(base);
  fs::copy_file(groot_tiny() / "config.json", base / "config.json");
  lrhost::test::write_text(base / "processor_config.json", kStatsProcessorConfig);
  lrhost::test::write_text(base / "statistics.json", kStatsStatistics);
  auto policy = tiny_policy({{"base_model_path", base.string()}, {"embodiment_tag", "libero_sim"}});
  CHECK(policy->prediction_horizon() == 4);  // the checkpoint's valid horizon
  auto processors = lrhost::policy::PolicyProcessors::for_policy(*policy, {}, {});
  const fs::path saved = scratch.path / "saved";
  fs::create_directories(saved);
  processors.save(saved);
  const auto post = lrhost::io::read_json_file(saved / "policy_postprocessor.json", "");
  CHECK(post["steps"][0]["registry_name"] == "groot_n1_7_action_decode_v1");
  CHECK(post["steps"][0]["config"]["action_decode_transform"] == "libero");
  CHECK_FALSE(post["steps"][0].contains("state_file"));
  const auto pre = lrhost::io::read_json_file(saved / "policy_preprocessor.json", "");
  CHECK(pre["steps"][2]["config"]["valid_action_horizon"] == 4);
  CHECK(pre["steps"][2]["config"]["video_modality_keys"] == nlohmann::ordered_json{"top"});
  CHECK(pre["steps"][2]["config"]["raw_stats"]["action"]["gripper"]["q99"][0] == 0.9);
  // The pack step's state file holds the flat checkpoint stats, q01 / q99 as min / max.
  const auto state =
      lrhost::io::read_safetensors(saved / "policy_preprocessor_step_2_groot_n1_7_pack_inputs_v1.safetensors");
  CHECK(torch::equal(state.at("observation.state.min"), torch::tensor({-1.0f, -2.0f, 0.5f})));
  CHECK(torch::equal(state.at("action.max"), torch::tensor({4.0f, 0.9f})));
  // Read back (the decode step chosen by its name) and written again: the same files.
  const auto loaded = lrhost::policy::PolicyProcessors::load(saved);
  const fs::path again = scratch.path / "again";
  fs::create_directories(again);
  loaded.save(again);
  CHECK(lrhost::io::read_json_file(again / "policy_postprocessor.json", "") == post);
  CHECK(lrhost::io::read_json_file(again / "policy_preprocessor.json", "") == pre);
  CHECK(lrhost::policy::PolicyProcessors::load(again) == loaded);
  CHECK(torch::equal(loaded.unnormalize(torch::zeros({1, 8, 16})), processors.unnormalize(torch::zeros({1, 8, 16}))));
  // The decode: 4 of 8 steps, the arm from [-1, 1] to [q01, q99], LIBERO's gripper -sign(2g - 1).
  auto y = torch::zeros({1, 8, 16});
  y.select(2, 0).fill_(2.0);   // clipped to 1: the arm's q99
  y.select(2, 1).fill_(-0.5);  // gripper 0.1 + 0.25 * 0.8 = 0.3 -> -sign(-0.4) = 1
  const auto decoded = processors.unnormalize(y);
  CHECK(decoded.sizes() == torch::IntArrayRef({1, 4, 2}));
  CHECK(torch::allclose(decoded.select(2, 0), torch::full({1, 4}, 4.0f)));
  CHECK(torch::equal(decoded.select(2, 1), torch::ones({1, 4})));
  // The pack step normalises the action by group and masks the checkpoint's valid horizon.
  lrhost::policy::Batch batch{{"observation.state", torch::tensor({{1.0f, 0.0f, 0.5f}})},
                              {"action", torch::tensor({2.0f, 0.5f}).repeat({1, 8, 1})}};
  const auto groot_steps = lrhost::policy::groot::GrootProcessorSteps::for_policy(*policy);
  const auto packed = groot_steps->pack(batch, *groot_steps->checkpoint_flat_stats());
  CHECK(packed.at("action_mask").sum().item<double>() == 4 * 2);
  CHECK(packed.at("action")[0][0][0].item<float>() == doctest::Approx(2 * (2.0 - 1.0) / 3.0 - 1));
  CHECK(packed.at("state")[0][0][2].item<float>() == 0.0f);  // equal bounds: 0
  // A robot whose state / action width is not the checkpoint's groups' is refused (LeRobot cuts or pads
  // the stats silently).
  auto wider = tiny_table({{"base_model_path", base.string()}, {"embodiment_tag", "libero_sim"}});
  wider["output_features"]["action"]["shape"] = {3};
  torch::manual_seed(0);
  auto other_robot = lrhost::policy::create_policy(wider);
  CHECK(lrhost::test::contains(lrhost::test::error_of<lrhost::util::ConfigError>(
                                   [&] { lrhost::policy::groot::GrootProcessorSteps::for_policy(*other_robot); }),
                               "describe 3 state and 2 action dims, the policy's features 3 and 3"));
  // Refused configs of the decode step.
  lrhost::policy::groot::GrootProcessorSteps read;
  auto decode = groot_steps->decode_config();
  auto relative = decode;
  relative["use_relative_action"] = true;
  CHECK_THROWS_AS(read.read_decode_config(relative, "decode"), lrhost::util::NotImplemented);
  auto empty = decode;
  empty["modality_config"] = nlohmann::ordered_json::object();
  CHECK_THROWS_AS(read.read_decode_config(empty, "decode"), lrhost::util::DataError);
  auto transform = decode;
  transform["action_decode_transform"] = "mirror";
  CHECK_THROWS_AS(read.read_decode_config(transform, "decode"), lrhost::util::DataError);
}

TEST_CASE("groot policy: LeRobot's tuning switches, eval-mode rule and weight-decay groups") {
  const std::vector<std::string> parts{"_groot_model.backbone.model.model.visual.",
                                       "_groot_model.backbone.model.model.language_model.",
                                       "_groot_model.action_head.model.", "_groot_model.action_head.state_encoder.",
                                       "_groot_model.action_head.vl_self_attention."};
  auto policy = tiny_policy();
  CHECK(trainable_prefixes(*policy, parts) == std::set<std::string>{parts[2], parts[3], parts[4]});
  CHECK(trainable_prefixes(*tiny_policy({{"tune_llm", true}, {"tune_visual", true}}), parts).size() == 5);
  auto frozen_head = tiny_policy({{"tune_diffusion_model", false}, {"tune_projector", false}, {"tune_vlln", false}});
  CHECK(trainable_prefixes(*frozen_head, parts).empty());
  // tune_top_llm_layers: the last kept text layer trains, the others not.
  auto top = tiny_policy({{"tune_top_llm_layers", 1}});
  int64_t trainable_layers = 0;
  for (const auto& item : top->named_parameters())
    if (item.value().requires_grad() && item.key().find("language_model.layers.2.") != std::string::npos)
      trainable_layers = 1;
    else if (item.value().requires_grad() && item.key().find("language_model.") != std::string::npos)
      FAIL("only the top text layer trains: " << item.key());
  CHECK(trainable_layers == 1);
  // Frozen parts stay in eval mode in training (no dropout draws there).
  frozen_head->train();
  CHECK(frozen_head->is_training());
  CHECK_FALSE(frozen_head->model()->action_head->model->is_training());
  CHECK_FALSE(frozen_head->model()->qwen->language_model->is_training());
  policy->train();
  CHECK(policy->model()->action_head->model->is_training());
  // Weight decay: biases and LayerNorm weights none, CategorySpecificLinear's `b` decays.
  const auto groups = policy->param_groups();
  REQUIRE(groups.size() == 2);
  CHECK_FALSE(groups[0].weight_decay.has_value());
  CHECK(groups[1].weight_decay == 0.0);
  std::map<const c10::TensorImpl*, std::string> names;
  for (const auto& item : policy->named_parameters()) names[item.value().unsafeGetTensorImpl()] = item.key();
  auto in = [&](const lrhost::optim::ParamGroup& group, const std::string& name) {
    return std::any_of(group.params.begin(), group.params.end(),
                       [&](const torch::Tensor& p) { return names[p.unsafeGetTensorImpl()] == name; });
  };
  CHECK(in(groups[0], "_groot_model.action_head.state_encoder.layer1.b"));
  CHECK(in(groups[1], "_groot_model.action_head.vlln.weight"));
  CHECK(in(groups[1], "_groot_model.action_head.model.proj_out_1.bias"));
  CHECK(policy->optimizer_preset()["grad_clip_norm"] == 1.0);
  CHECK(policy->scheduler_preset()["warmup_steps"] == 500);
}

TEST_CASE("groot policy: gradient checkpointing changes no loss and no gradient, dropouts included") {
  auto plain = tiny_policy();
  auto checkpointed = tiny_policy({{"gradient_checkpointing", true}, {"tune_llm", true}, {"tune_visual", true}});
  auto tuned = tiny_policy({{"tune_llm", true}, {"tune_visual", true}});
  const auto batch = processed_batch(2);
  for (auto* policy : {tuned.get(), checkpointed.get()}) policy->train();
  torch::manual_seed(11);
  const auto want = tuned->forward(batch).loss;
  want.backward();
  torch::manual_seed(11);
  const auto got = checkpointed->forward(batch).loss;
  got.backward();
  CHECK(got.item<double>() == want.item<double>());
  const auto a = tuned->named_parameters(), b = checkpointed->named_parameters();
  double worst = 0;
  for (const auto& item : a) {
    const auto& other = b[item.key()];
    if (!item.value().grad().defined()) continue;
    REQUIRE(other.grad().defined());
    worst = std::max(worst, (item.value().grad() - other.grad()).abs().max().item<double>());
  }
  CHECK(worst == 0.0);
  // use_bf16 (LeRobot's default): the forward under bf16 autocast on the CPU too, said at startup.
  auto bf16 = tiny_policy({{"use_bf16", true}});
  CHECK_FALSE(plain->own_autocast().has_value());
  REQUIRE(bf16->own_autocast().has_value());
  plain->eval();
  bf16->eval();
  torch::manual_seed(5);
  const double fp32_loss = plain->forward(batch).loss.item<double>();
  torch::manual_seed(5);
  const auto bf16_loss = bf16->forward(batch).loss;
  CHECK((bf16_loss.scalar_type() == torch::kFloat32));
  CHECK(bf16_loss.item<double>() != fp32_loss);                                        // bf16 matmuls ran
  CHECK(std::abs(bf16_loss.item<double>() - fp32_loss) < 0.05 * std::abs(fp32_loss));  // and only rounded
  // The activation probe's example batch is a processed one the forward takes (one camera: 4 image tokens).
  const auto example = plain->example_batch(3);
  REQUIRE(example.has_value());
  CHECK(example->at("input_ids").size(0) == 3);
  CHECK(example->at("input_ids").eq(305).sum().item<int64_t>() == 3 * 4);
  CHECK(plain->forward(*example).loss.defined());
  // Missing processed entries are named.
  auto partial = batch;
  partial.erase("pixel_values");
  CHECK(lrhost::test::contains(lrhost::test::error_of<lrhost::util::DataError>([&] { plain->forward(partial); }),
                               "the batch has no 'pixel_values'"));
  auto only_noise = batch;
  only_noise["noise"] = torch::randn({2, 8, 16});
  CHECK_THROWS_AS(plain->forward(only_noise), lrhost::util::DataError);
}

TEST_CASE("groot prompt: the assembled ids are the rendered prompt's, left padding with the pad token") {
  lrhost::policy::groot::GrootPromptEncoder encoder(groot_tiny());
  const std::string text = "push the blue block onto the green target on the left";
  const auto text_ids = encoder.text_ids(text);
  const auto rendered = encoder.tokenizer().encode(lrhost::policy::groot::GrootPromptEncoder::prompt(text, 2, 4));
  CHECK(encoder.prompt_ids(text_ids, 2, 4) == rendered);
  const auto short_ids = encoder.text_ids("stack");
  const auto tokens = encoder.encode({&text_ids, &short_ids}, 2, 4);
  const int64_t pad = *encoder.tokenizer().settings().pad_id;
  const int64_t gap = static_cast<int64_t>(text_ids.size() - short_ids.size());
  CHECK(tokens.input_ids.size(1) == static_cast<int64_t>(rendered.size()));
  CHECK(tokens.attention_mask[1].slice(0, 0, gap).sum().item<int64_t>() == 0);
  CHECK(tokens.input_ids[1].slice(0, 0, gap).eq(pad).all().item<bool>());
  CHECK(tokens.attention_mask[0].all().item<bool>());
}

TEST_CASE("groot processor steps: LeRobot's pack config, an unknown embodiment refused, unported settings") {
  auto policy = tiny_policy();
  auto steps = lrhost::policy::groot::GrootProcessorSteps::for_policy(*policy);
  const auto pack = steps->pack_config();
  CHECK(pack["action_horizon"] == 8);
  CHECK(pack["embodiment_mapping"]["new_embodiment"] == 10);
  CHECK(steps->unpack_config()["env_action_dim"] == 2);
  lrhost::policy::groot::GrootProcessorSteps read;
  auto unknown = pack;
  unknown["embodiment_tag"] = "my_robot";
  CHECK(lrhost::test::contains(
      lrhost::test::error_of<lrhost::util::ConfigError>([&] { read.read_pack_config(unknown, "pack"); }),
      "embodiment_tag 'my_robot' is not in the embodiment mapping"));
  auto frames = pack;
  frames["video_horizon"] = 0;
  CHECK(lrhost::test::contains(
      lrhost::test::error_of<lrhost::util::DataError>([&] { read.read_pack_config(frames, "pack"); }),
      "'video_horizon' must be null or a positive integer"));
  auto extra = pack;
  extra["surprise"] = 1;
  CHECK(lrhost::test::contains(
      lrhost::test::error_of<lrhost::util::DataError>([&] { read.read_pack_config(extra, "pack"); }),
      "unknown config key 'surprise'"));
  auto vlm = steps->vlm_config("cpu");
  vlm["use_albumentations"] = true;
  CHECK_THROWS_AS(read.read_vlm_config(vlm, "vlm"), lrhost::util::NotImplemented);
  // A type other than groot has none of these steps.
  auto mlp = lrhost::policy::create_policy({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}});
  CHECK_THROWS_AS(lrhost::policy::groot::GrootProcessorSteps::for_policy(*mlp), lrhost::util::ConfigError);
}

TEST_CASE("groot policy: the tied embedding is saved under lm_head's name, as LeRobot stores it") {
  auto policy = tiny_policy();
  auto state = policy->state_dict();
  policy->adapt_saved_tensors(state);
  auto has = [&](const std::string& name) {
    return std::any_of(state.begin(), state.end(), [&](const auto& e) { return e.first == name; });
  };
  CHECK(has("_groot_model.backbone.model.lm_head.weight"));
  CHECK_FALSE(has("_groot_model.backbone.model.model.language_model.embed_tokens.weight"));
  policy->adapt_pretrained_tensors(state);
  CHECK(has("_groot_model.backbone.model.model.language_model.embed_tokens.weight"));
  CHECK_FALSE(has("_groot_model.backbone.model.lm_head.weight"));
}
