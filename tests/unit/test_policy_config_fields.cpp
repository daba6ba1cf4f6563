// Unit tests of host/policy/config_fields: the field-list visitors behind every policy config. The
// reader's type errors name the key and the expected type, unknown keys are refused with the nearest
// name, lists/nulls/choices/refusals follow their traits; and for each config (ACT, Diffusion,
// SmolVLA, MLP) from_json(to_json(x)) == x with non-default values, to_json's keys are the declared
// field order, and the weight-shaping fields are the declared ones.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "host/policy/act/act_config.hpp"
#include "host/policy/config_fields.hpp"
#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/policy/mlp/mlp_policy.hpp"
#include "host/policy/smolvla/smolvla_config.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace config_fields_test {

using lrhost::policy::AlwaysNull;
using lrhost::policy::FieldReader;
using lrhost::policy::FieldTraits;
using lrhost::policy::NormalizationMapping;
using lrhost::policy::PolicyFeature;
using lrhost::policy::PolicyFeatures;
using nlohmann::json;
using nlohmann::ordered_json;

// One field of every kind the reader knows.
struct Sample {
  int64_t count = 1;
  double rate = 0.5;
  bool flag = false;
  bool legacy_flag = false;
  std::string mode = "a";
  std::vector<int64_t> dims{1, 2};
  std::vector<int64_t> size{4, 4};
  std::vector<double> betas{0.9, 0.99};
  std::optional<std::string> name;
  std::optional<bool> maybe;
  std::optional<double> coeff;
  std::optional<int64_t> steps;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::vector<int64_t>> pair;
  NormalizationMapping mapping{{"STATE", "MEAN_STD"}};
  std::vector<PolicyFeature> inputs;
  AlwaysNull unsupported;
  bool own_option = false;

  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    f("count", c.count, {.shapes_weights = true});
    f("rate", c.rate);
    f("flag", c.flag);
    f("legacy_flag", c.legacy_flag, {.bool_or_int = true});
    f("mode", c.mode, {.one_of = {"a", "b"}});
    f("dims", c.dims, {.shapes_weights = true});
    f("size", c.size, {.length = 2, .null_is_empty = true, .expected = "[width, height] or null"});
    f("betas", c.betas);
    f("name", c.name);
    f("maybe", c.maybe);
    f("coeff", c.coeff);
    f("steps", c.steps);
    f("tags", c.tags);
    f("pair", c.pair, {.length = 2});
    f("mapping", c.mapping);
    f("inputs", c.inputs, {.dataset = &PolicyFeatures::inputs});
    f("unsupported", c.unsupported, {.refusal = "not here; use null"});
    f("own_option", c.own_option, {.lrhost_only = true});
  }
  bool operator==(const Sample&) const = default;
};

Sample read_sample(const json& table, const PolicyFeatures& dataset = {}) {
  FieldReader reader(table, "thing 'sample'", dataset);
  Sample s;
  lrhost::policy::read_config_fields(s, reader);
  reader.finish();
  return s;
}

std::string sample_error(const json& table) {
  return lrhost::test::described_error<lrhost::util::Error>([&] { read_sample(table); });
}

std::vector<std::string> keys_of(const ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  return keys;
}

// The declared names with "type" first: what to_json's keys must be.
template <class Config>
std::vector<std::string> typed_names(bool with_lrhost_only) {
  std::vector<std::string> names{"type"};
  std::vector<std::string> own = lrhost::policy::config_field_names<Config>(&FieldTraits::lrhost_only);
  for (const auto& name : lrhost::policy::config_field_names<Config>())
    if (with_lrhost_only || std::find(own.begin(), own.end(), name) == own.end()) names.push_back(name);
  return names;
}

// How many top-level values of two config.json objects differ.
int differing_values(const ordered_json& a, const ordered_json& b) {
  int count = 0;
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b[key] != value) ++count;
  return count;
}

PolicyFeatures camera_state_action(int64_t state, int64_t action, std::vector<int64_t> image = {3, 96, 96}) {
  PolicyFeatures f;
  f.inputs.push_back({"observation.images.top", "VISUAL", std::move(image)});
  f.inputs.push_back({"observation.state", "STATE", {state}});
  f.outputs.push_back({"action", "ACTION", {action}});
  return f;
}

// The test cases live in the namespace too: the unit tests are compiled in unity batches, where a
// using-directive would leak these helpers' names into the next file.
TEST_CASE("config fields: type errors name the key and the expected type") {
  CHECK(sample_error({{"count", "x"}}) == "thing 'sample': 'count' must be an integer, got \"x\"");
  CHECK(sample_error({{"count", 2.5}}) == "thing 'sample': 'count' must be an integer, got 2.5");
  CHECK(sample_error({{"rate", true}}) == "thing 'sample': 'rate' must be a number, got true");
  CHECK(sample_error({{"flag", 1}}) == "thing 'sample': 'flag' must be true or false, got 1");
  CHECK(sample_error({{"legacy_flag", 2}}) == "thing 'sample': 'legacy_flag' must be true, false, 0 or 1, got 2");
  CHECK(sample_error({{"mode", 3}}) == "thing 'sample': 'mode' must be a string, got 3");
  CHECK(sample_error({{"mode", "c"}}) == "thing 'sample': 'mode' must be one of 'a', 'b', got 'c'");
  CHECK(sample_error({{"dims", {1, "x"}}}) == "thing 'sample': 'dims' must be a list of integers, got [1,\"x\"]");
  CHECK(sample_error({{"dims", 3}}) == "thing 'sample': 'dims' must be a list of integers, got 3");
  CHECK(sample_error({{"size", {1, 2, 3}}}) == "thing 'sample': 'size' must be [width, height] or null, got [1,2,3]");
  CHECK(sample_error({{"betas", {"x"}}}) == "thing 'sample': 'betas' must be a list of numbers, got [\"x\"]");
  CHECK(sample_error({{"name", 1}}) == "thing 'sample': 'name' must be a string or null, got 1");
  CHECK(sample_error({{"maybe", "yes"}}) == "thing 'sample': 'maybe' must be true, false or null, got \"yes\"");
  CHECK(sample_error({{"coeff", "x"}}) == "thing 'sample': 'coeff' must be a number or null, got \"x\"");
  CHECK(sample_error({{"steps", 1.5}}) == "thing 'sample': 'steps' must be an integer or null, got 1.5");
  CHECK(sample_error({{"tags", {1}}}) == "thing 'sample': 'tags' must be a list of strings or null, got [1]");
  CHECK(sample_error({{"pair", {1}}}) == "thing 'sample': 'pair' must be a list of integers or null, got [1]");
  CHECK(lrhost::test::contains(sample_error({{"mapping", {{"STATE", "ZSCORE"}}}}), "'mapping.STATE' must be one of"));
  CHECK(lrhost::test::contains(sample_error({{"inputs", 3}}), "thing 'sample': 'inputs'"));
  // A field supported only as null says why, as NotImplemented.
  CHECK(lrhost::test::described_error<lrhost::util::NotImplemented>([] {
          read_sample({{"unsupported", {{"on", true}}}});
        }) == "thing 'sample': 'unsupported' = {\"on\":true}: not here; use null");
}

TEST_CASE("config fields: unknown keys are refused with the nearest name; null and absent keep defaults") {
  CHECK(lrhost::test::contains(sample_error({{"cuont", 2}}), "thing 'sample': unknown option 'cuont'"));
  CHECK(lrhost::test::contains(sample_error({{"cuont", 2}}), "did you mean 'count'?"));
  // lrhost-only fields are read like any other.
  CHECK(read_sample({{"own_option", true}}).own_option);

  const Sample defaults;
  CHECK(read_sample(json::object()) == defaults);
  CHECK(read_sample(json::array()) == defaults);  // an empty Lua table
  CHECK(read_sample({{"count", nullptr}, {"dims", nullptr}, {"mapping", nullptr}}) == defaults);
  // null empties a null_is_empty list; integral numbers (Lua's 4.0) are integers.
  CHECK(read_sample({{"size", nullptr}}).size.empty());
  CHECK((read_sample({{"dims", {4.0, 5}}}).dims == std::vector<int64_t>{4, 5}));
  CHECK(read_sample({{"legacy_flag", 1}}).legacy_flag);
  // Features: the table's when given, else the dataset's side named by the trait.
  PolicyFeatures dataset;
  dataset.inputs.push_back({"observation.state", "STATE", {3}});
  CHECK((read_sample(json::object(), dataset).inputs == dataset.inputs));

  const json table{{"count", 3}};  // the reader keeps a reference to its table
  FieldReader reader(table, "thing 'sample'");
  Sample s;
  lrhost::policy::read_config_fields(s, reader);
  CHECK(reader.given(&s.count));
  CHECK_FALSE(reader.given(&s.rate));
}

TEST_CASE("config fields: writing follows the declared order, round trips, and leaves lrhost's own out") {
  Sample s;
  s.count = 7;
  s.rate = 0.25;
  s.flag = true;
  s.legacy_flag = true;
  s.mode = "b";
  s.dims = {3};
  s.size.clear();
  s.betas = {0.5};
  s.name = "n";
  s.maybe = false;
  s.coeff = 0.125;
  s.steps = 9;
  s.tags = std::vector<std::string>{"x", "y"};
  s.pair = std::vector<int64_t>{2, 3};
  s.mapping = {{"STATE", "MIN_MAX"}, {"ACTION", "IDENTITY"}};
  s.inputs = {{"observation.state", "STATE", {2}}};
  s.own_option = true;

  auto plain = lrhost::policy::write_config_fields(s, "sample");
  auto with_own = lrhost::policy::write_config_fields(s, "sample", /*with_lrhost_only=*/true);
  CHECK((keys_of(plain) == typed_names<Sample>(false)));
  CHECK((keys_of(with_own) == typed_names<Sample>(true)));
  CHECK(plain["size"].is_null());
  CHECK(plain["unsupported"].is_null());
  CHECK(plain["mapping"].dump() == R"({"STATE":"MIN_MAX","ACTION":"IDENTITY"})");
  CHECK(plain["inputs"].dump() == R"({"observation.state":{"type":"STATE","shape":[2]}})");

  with_own.erase("type");
  CHECK(read_sample(json::parse(with_own.dump())) == s);
  CHECK((lrhost::policy::config_field_names<Sample>(&FieldTraits::shapes_weights) ==
         std::vector<std::string>{"count", "dims"}));
}

TEST_CASE("config fields: ACT round trips with non-default values, keys in declared order") {
  using lrhost::policy::act::ACTConfig;
  const json table{{"n_obs_steps", 1},
                   {"device", "cpu"},
                   {"use_amp", true},
                   {"push_to_hub", false},
                   {"repo_id", "me/act"},
                   {"private", true},
                   {"tags", {"t"}},
                   {"license", "mit"},
                   {"pretrained_revision", "main"},
                   {"chunk_size", 20},
                   {"n_action_steps", 1},
                   {"normalization_mapping", {{"VISUAL", "IDENTITY"}, {"STATE", "MIN_MAX"}, {"ACTION", "MIN_MAX"}}},
                   {"pretrained_backbone_weights", "/tmp/resnet18.safetensors"},
                   {"replace_final_stride_with_dilation", 0},
                   {"pre_norm", true},
                   {"dim_model", 64},
                   {"n_heads", 4},
                   {"dim_feedforward", 128},
                   {"feedforward_activation", "gelu"},
                   {"n_encoder_layers", 2},
                   {"n_decoder_layers", 2},
                   {"use_vae", false},
                   {"latent_dim", 16},
                   {"n_vae_encoder_layers", 3},
                   {"temporal_ensemble_coeff", 0.01},
                   {"dropout", 0.2},
                   {"kl_weight", 5.0},
                   {"optimizer_lr", 2e-5},
                   {"optimizer_weight_decay", 1e-3},
                   {"optimizer_lr_backbone", 3e-5}};
  const auto x = ACTConfig::from_json(table, camera_state_action(6, 4));
  CHECK(differing_values(x.to_json(), ACTConfig{}.to_json()) >= 28);
  CHECK(ACTConfig::from_json(json::parse(x.to_json().dump())) == x);
  CHECK((keys_of(x.to_json()) == typed_names<ACTConfig>(true)));
  CHECK(ACTConfig::weight_shape_fields().size() == 11);
}

TEST_CASE("config fields: Diffusion round trips with non-default values, keys in declared order") {
  using lrhost::policy::diffusion::DiffusionConfig;
  const json table{{"n_obs_steps", 3},
                   {"horizon", 32},
                   {"n_action_steps", 8},
                   {"normalization_mapping", {{"VISUAL", "IDENTITY"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}}},
                   {"drop_n_last_frames", 5},
                   {"crop_ratio", 0.5},
                   {"crop_shape", {48, 40}},
                   {"crop_is_random", false},
                   {"use_group_norm", true},
                   {"spatial_softmax_num_keypoints", 16},
                   {"use_separate_rgb_encoder_per_camera", false},
                   {"down_dims", {64, 128}},
                   {"kernel_size", 3},
                   {"n_groups", 4},
                   {"diffusion_step_embed_dim", 32},
                   {"use_film_scale_modulation", false},
                   {"noise_scheduler_type", "DDIM"},
                   {"num_train_timesteps", 50},
                   {"beta_schedule", "linear"},
                   {"beta_start", 0.001},
                   {"beta_end", 0.03},
                   {"prediction_type", "sample"},
                   {"clip_sample", false},
                   {"clip_sample_range", 2.0},
                   {"num_inference_steps", 10},
                   {"compile_model", true},
                   {"compile_mode", "default"},
                   {"do_mask_loss_for_padding", true},
                   {"optimizer_lr", 3e-4},
                   {"optimizer_betas", {0.9, 0.99}},
                   {"optimizer_eps", 1e-6},
                   {"optimizer_weight_decay", 1e-4},
                   {"scheduler_name", "linear"},
                   {"scheduler_warmup_steps", 10}};
  const auto x = DiffusionConfig::from_json(table, camera_state_action(6, 4));
  CHECK(differing_values(x.to_json(), DiffusionConfig{}.to_json()) >= 33);
  CHECK(DiffusionConfig::from_json(json::parse(x.to_json().dump())) == x);
  CHECK((keys_of(x.to_json()) == typed_names<DiffusionConfig>(true)));
  // With a resize, crop_shape is derived (__post_init__), and the derived value round trips.
  auto resized = table;
  resized["resize_shape"] = {64, 80};
  const auto y = DiffusionConfig::from_json(resized, camera_state_action(6, 4));
  CHECK((y.crop_shape == std::vector<int64_t>{32, 40}));
  CHECK(DiffusionConfig::from_json(json::parse(y.to_json().dump())) == y);
  CHECK(DiffusionConfig::weight_shape_fields().size() == 12);
}

TEST_CASE("config fields: SmolVLA round trips with non-default values; lrhost's options only in the recipe JSON") {
  using lrhost::policy::smolvla::SmolVLAConfig;
  // The features are given in key order, the empty camera among them: config.json read as a plain
  // JSON object lists features sorted, so only then does the order survive a round trip.
  const json camera{{"type", "VISUAL"}, {"shape", {3, 96, 96}}};
  const json table{{"input_features",
                    {{"observation.images.empty_camera_0", camera},
                     {"observation.images.top", camera},
                     {"observation.state", {{"type", "STATE"}, {"shape", {6}}}}}},
                   {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {4}}}}}},
                   {"chunk_size", 10},
                   {"n_action_steps", 5},
                   {"normalization_mapping", {{"VISUAL", "MEAN_STD"}, {"STATE", "MIN_MAX"}, {"ACTION", "MIN_MAX"}}},
                   {"max_state_dim", 16},
                   {"max_action_dim", 8},
                   {"resize_imgs_with_padding", {64, 48}},
                   {"empty_cameras", 1},
                   {"tokenizer_max_length", 24},
                   {"num_steps", 4},
                   {"freeze_vision_encoder", false},
                   {"train_expert_only", false},
                   {"train_state_proj", false},
                   {"optimizer_lr", 2e-4},
                   {"optimizer_betas", {0.8, 0.9}},
                   {"optimizer_eps", 1e-7},
                   {"optimizer_weight_decay", 1e-5},
                   {"optimizer_grad_clip_norm", 5},
                   {"scheduler_warmup_steps", 10},
                   {"scheduler_decay_steps", 100},
                   {"scheduler_decay_lr", 1e-6},
                   {"vlm_model_name", "/models/vlm"},
                   {"load_vlm_weights", true},
                   {"attention_mode", "self_attn"},
                   {"prefix_length", 7},
                   {"pad_language_to", "max_length"},
                   {"num_expert_layers", 4},
                   {"num_vlm_layers", 8},
                   {"self_attn_every_n_layers", 3},
                   {"expert_width_multiplier", 0.5},
                   {"min_period", 0.01},
                   {"max_period", 2.0},
                   {"compile_mode", "default"},
                   {"vision_cache_max_gib", 3.5}};
  const auto x = SmolVLAConfig::from_json(table);
  CHECK(x.input_features.size() == 3);  // the empty camera is not added twice
  CHECK(differing_values(x.to_recipe_json(), SmolVLAConfig{}.to_recipe_json()) >= 32);
  CHECK(SmolVLAConfig::from_json(json::parse(x.to_recipe_json().dump())) == x);
  // config.json leaves lrhost's options out: reading it back gives their defaults.
  auto from_config_json = SmolVLAConfig::from_json(json::parse(x.to_json().dump()));
  CHECK(from_config_json.vision_cache_max_gib == SmolVLAConfig{}.vision_cache_max_gib);
  from_config_json.vision_cache_max_gib = x.vision_cache_max_gib;
  CHECK(from_config_json == x);
  CHECK((keys_of(x.to_json()) == typed_names<SmolVLAConfig>(false)));
  CHECK((keys_of(x.to_recipe_json()) == typed_names<SmolVLAConfig>(true)));
  CHECK(x.to_json()["rtc_config"].is_null());
  // An explicit null resize means no resize, and is written back as null.
  auto unresized = table;
  unresized["resize_imgs_with_padding"] = nullptr;
  const auto y = SmolVLAConfig::from_json(unresized);
  CHECK(y.resize_imgs_with_padding.empty());
  CHECK(y.to_json()["resize_imgs_with_padding"].is_null());
  CHECK(SmolVLAConfig::from_json(json::parse(y.to_recipe_json().dump())) == y);
  CHECK((SmolVLAConfig::weight_shape_fields() ==
         std::vector<std::string>{"max_state_dim", "max_action_dim", "num_expert_layers", "num_vlm_layers",
                                  "self_attn_every_n_layers", "expert_width_multiplier"}));
}

TEST_CASE("config fields: MLP round trips with non-default values, keys in declared order") {
  using lrhost::policy::MlpConfig;
  const json table{{"input_key", "observation.environment_state"},
                   {"target_key", "next.reward"},
                   {"input_dim", 5},
                   {"output_dim", 2},
                   {"hidden_dims", {8, 4.0}},
                   {"activation", "tanh"},
                   {"dropout", 0.1},
                   {"loss", "l1"}};
  const auto x = MlpConfig::from_json(table, {});
  CHECK(differing_values(x.to_json(), MlpConfig{}.to_json()) == 8);
  CHECK(MlpConfig::from_json(json::parse(x.to_json().dump()), {}) == x);
  CHECK((keys_of(x.to_json()) == typed_names<MlpConfig>(true)));
  CHECK(lrhost::test::contains(lrhost::test::described_error<lrhost::util::ConfigError>([] {
                                 MlpConfig::from_json({{"type", "act"}}, {});
                               }),
                               "'type' must be \"mlp\""));
}

}  // namespace config_fields_test
