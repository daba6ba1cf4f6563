// Unit tests of the diffusion policy (host/policy/diffusion): config reading, LeRobot's defaults and
// validation; the DDPM/DDIM noise schedulers against their formulas; LeRobot HEAD's state_dict keys,
// shapes, dtypes and parameter order (full default model and small variants); the loss, its random
// draws and padding mask; sampling, the inference queues and the presets. Most tests use a small
// model (U-Net 32-64, horizon 8, 32x32 or 64x64 cameras) so they run in seconds. Equality with
// LeRobot's own code on the same weights is the interop tests' job (tests/interop, label interop).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <set>

#include "host/io/safetensors.hpp"
#include "host/policy/diffusion/diffusion_policy.hpp"
#include "host/policy/diffusion/noise_scheduler.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/vision/resnet18.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using lrhost::policy::create_policy;
using lrhost::policy::PolicyFeature;
using lrhost::policy::PolicyFeatures;
using lrhost::util::ConfigError;
using nlohmann::json;
using nlohmann::ordered_json;
namespace diffusion = lrhost::policy::diffusion;

namespace {

PolicyFeatures make_features(int64_t state, int64_t action, int cameras, int64_t h, int64_t w, int64_t env = 0) {
  PolicyFeatures f;
  f.inputs.push_back({"observation.state", "STATE", {state}});
  for (int i = 0; i < cameras; ++i)
    f.inputs.push_back({"observation.images.cam" + std::to_string(i), "VISUAL", {3, h, w}});
  if (env) f.inputs.push_back({"observation.environment_state", "ENV", {env}});
  f.outputs.push_back({"action", "ACTION", {action}});
  return f;
}

// A small model: U-Net 32-64, horizon 8, 4 executed actions, 8 keypoints, 10 inference steps.
json small_config(json overrides = json::object()) {
  json c = {{"type", "diffusion"},
            {"horizon", 8},
            {"n_action_steps", 4},
            {"down_dims", {32, 64}},
            {"kernel_size", 3},
            {"diffusion_step_embed_dim", 32},
            {"spatial_softmax_num_keypoints", 8},
            {"use_group_norm", true},
            {"num_inference_steps", 10}};
  if (!overrides.is_null()) c.update(overrides);
  return c;
}

std::shared_ptr<diffusion::DiffusionPolicy> make_policy(const json& config, const PolicyFeatures& features) {
  return std::dynamic_pointer_cast<diffusion::DiffusionPolicy>(create_policy(config, features));
}

std::string error_of(const json& config, const PolicyFeatures& features) {
  try {
    create_policy(config, features);
  } catch (const lrhost::util::Error& e) {
    return lrhost::util::describe(e);
  }
  return "";
}

// A training batch of windows for `features` (cameras in [0, 1]).
Batch make_batch(const PolicyFeatures& features, int64_t batch, int64_t n_obs, int64_t horizon) {
  Batch b;
  for (const auto& f : features.inputs) {
    std::vector<int64_t> shape{batch, n_obs};
    shape.insert(shape.end(), f.shape.begin(), f.shape.end());
    b[f.key] = f.type == "VISUAL" ? torch::rand(shape) : torch::randn(shape);
  }
  b["action"] = torch::randn({batch, horizon, features.outputs[0].shape[0]}).clamp(-1, 1);
  b["action_is_pad"] = torch::zeros({batch, horizon}, torch::kBool);
  return b;
}

// ---- LeRobot's module tree, written out from the architecture (names, shapes, order) ----------

struct Keys {
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;  // named_parameters() order
  std::map<std::string, std::vector<int64_t>> buffers;
};

void add_trunk(Keys& k, const std::string& p, bool group_norm) {
  auto norm = [&](const std::string& name, int64_t c) {
    k.params.push_back({p + name + ".weight", {c}});
    k.params.push_back({p + name + ".bias", {c}});
    if (!group_norm) {
      k.buffers[p + name + ".running_mean"] = {c};
      k.buffers[p + name + ".running_var"] = {c};
      k.buffers[p + name + ".num_batches_tracked"] = {};
    }
  };
  k.params.push_back({p + "0.weight", {64, 3, 7, 7}});
  norm("1", 64);
  const int64_t widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t c = widths[layer], in = layer == 0 ? 64 : widths[layer - 1];
    for (int block = 0; block < 2; ++block) {
      std::string b = std::to_string(layer + 4) + "." + std::to_string(block) + ".";
      k.params.push_back({p + b + "conv1.weight", {c, block == 0 ? in : c, 3, 3}});
      norm(b + "bn1", c);
      k.params.push_back({p + b + "conv2.weight", {c, c, 3, 3}});
      norm(b + "bn2", c);
      if (block == 0 && layer > 0) {
        k.params.push_back({p + b + "downsample.0.weight", {c, in, 1, 1}});
        norm(b + "downsample.1", c);
      }
    }
  }
}

void add_encoder(Keys& k, const std::string& p, bool group_norm, int64_t keypoints, int64_t map_h, int64_t map_w) {
  add_trunk(k, p + "backbone.", group_norm);
  k.params.push_back({p + "pool.nets.weight", {keypoints, 512, 1, 1}});
  k.params.push_back({p + "pool.nets.bias", {keypoints}});
  k.buffers[p + "pool.pos_grid"] = {map_h * map_w, 2};
  k.params.push_back({p + "out.weight", {2 * keypoints, 2 * keypoints}});
  k.params.push_back({p + "out.bias", {2 * keypoints}});
}

void add_conv_block(Keys& k, const std::string& p, int64_t in, int64_t out, int64_t kernel) {
  k.params.push_back({p + "block.0.weight", {out, in, kernel}});
  k.params.push_back({p + "block.0.bias", {out}});
  k.params.push_back({p + "block.1.weight", {out}});
  k.params.push_back({p + "block.1.bias", {out}});
}

void add_residual(Keys& k, const std::string& p, int64_t in, int64_t out, int64_t cond, int64_t kernel,
                  bool film_scale) {
  add_conv_block(k, p + "conv1.", in, out, kernel);
  const int64_t cc = film_scale ? 2 * out : out;
  k.params.push_back({p + "cond_encoder.1.weight", {cc, cond}});
  k.params.push_back({p + "cond_encoder.1.bias", {cc}});
  add_conv_block(k, p + "conv2.", out, out, kernel);
  if (in != out) {
    k.params.push_back({p + "residual_conv.weight", {out, in, 1}});
    k.params.push_back({p + "residual_conv.bias", {out}});
  }
}

struct Arch {
  int64_t state = 2, action = 2, env = 0, cameras = 1, map_h = 3, map_w = 3;
  bool separate = true, group_norm = false, film_scale = true;
  int64_t keypoints = 32, n_obs = 2, embed = 128, kernel = 5;
  std::vector<int64_t> dims{512, 1024, 2048};
};

Keys lerobot_keys(const Arch& a) {
  Keys k;
  const std::string p = "diffusion.";
  if (a.cameras > 0) {
    if (a.separate)
      for (int64_t i = 0; i < a.cameras; ++i)
        add_encoder(k, p + "rgb_encoder." + std::to_string(i) + ".", a.group_norm, a.keypoints, a.map_h, a.map_w);
    else
      add_encoder(k, p + "rgb_encoder.", a.group_norm, a.keypoints, a.map_h, a.map_w);
  }
  const int64_t cond = a.embed + a.n_obs * (a.state + a.env + a.cameras * 2 * a.keypoints);
  const std::string u = p + "unet.";
  k.params.push_back({u + "diffusion_step_encoder.1.weight", {4 * a.embed, a.embed}});
  k.params.push_back({u + "diffusion_step_encoder.1.bias", {4 * a.embed}});
  k.params.push_back({u + "diffusion_step_encoder.3.weight", {a.embed, 4 * a.embed}});
  k.params.push_back({u + "diffusion_step_encoder.3.bias", {a.embed}});
  std::vector<std::pair<int64_t, int64_t>> in_out{{a.action, a.dims[0]}};
  for (size_t i = 0; i + 1 < a.dims.size(); ++i) in_out.push_back({a.dims[i], a.dims[i + 1]});
  for (size_t i = 0; i < in_out.size(); ++i) {
    auto [in, out] = in_out[i];
    std::string d = u + "down_modules." + std::to_string(i) + ".";
    add_residual(k, d + "0.", in, out, cond, a.kernel, a.film_scale);
    add_residual(k, d + "1.", out, out, cond, a.kernel, a.film_scale);
    if (i + 1 < in_out.size()) {
      k.params.push_back({d + "2.weight", {out, out, 3}});
      k.params.push_back({d + "2.bias", {out}});
    }
  }
  for (int i = 0; i < 2; ++i)
    add_residual(k, u + "mid_modules." + std::to_string(i) + ".", a.dims.back(), a.dims.back(), cond, a.kernel,
                 a.film_scale);
  for (size_t level = in_out.size() - 1, i = 0; level >= 1; --level, ++i) {
    auto [out, in] = in_out[level];
    std::string d = u + "up_modules." + std::to_string(i) + ".";
    add_residual(k, d + "0.", in * 2, out, cond, a.kernel, a.film_scale);
    add_residual(k, d + "1.", out, out, cond, a.kernel, a.film_scale);
    k.params.push_back({d + "2.weight", {out, out, 4}});  // ConvTranspose1d: (in, out, k)
    k.params.push_back({d + "2.bias", {out}});
  }
  add_conv_block(k, u + "final_conv.0.", a.dims[0], a.dims[0], a.kernel);
  k.params.push_back({u + "final_conv.1.weight", {a.action, a.dims[0], 1}});
  k.params.push_back({u + "final_conv.1.bias", {a.action}});
  return k;
}

void check_keys(diffusion::DiffusionPolicy& policy, const Keys& expected) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  for (const auto& item : policy.named_parameters()) params.push_back({item.key(), item.value().sizes().vec()});
  CHECK(params.size() == expected.params.size());
  // Order and shapes: the optimizer state indices depend on it.
  for (size_t i = 0; i < std::min(params.size(), expected.params.size()); ++i) {
    INFO("parameter " << i);
    CHECK(params[i].first == expected.params[i].first);
    CHECK((params[i].second == expected.params[i].second));
  }
  std::map<std::string, std::vector<int64_t>> buffers;
  for (const auto& item : policy.named_buffers()) {
    buffers[item.key()] = item.value().sizes().vec();
    bool counter = item.key().ends_with("num_batches_tracked");
    CHECK((item.value().scalar_type() == (counter ? torch::kLong : torch::kFloat32)));
  }
  CHECK((buffers == expected.buffers));
  for (const auto& item : policy.named_parameters()) CHECK((item.value().scalar_type() == torch::kFloat32));
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace

// ---- config ----------------------------------------------------------------------------------

TEST_CASE("diffusion config: LeRobot HEAD defaults in field order, and a config.json round trip") {
  // Inputs in alphabetical order: create_policy takes a nlohmann::json, whose objects sort their keys,
  // so only that order of the features survives the round trip.
  auto features = make_features(2, 2, 1, 64, 64);
  std::rotate(features.inputs.begin(), features.inputs.begin() + 1, features.inputs.end());
  auto policy = make_policy(small_config(), features);
  auto c = policy->config();
  std::vector<std::string> order;
  for (const auto& [key, value] : c.items()) order.push_back(key);
  const std::vector<std::string> expected{"type",
                                          "n_obs_steps",
                                          "input_features",
                                          "output_features",
                                          "device",
                                          "use_amp",
                                          "use_peft",
                                          "push_to_hub",
                                          "repo_id",
                                          "private",
                                          "tags",
                                          "license",
                                          "pretrained_path",
                                          "pretrained_revision",
                                          "horizon",
                                          "n_action_steps",
                                          "normalization_mapping",
                                          "drop_n_last_frames",
                                          "vision_backbone",
                                          "resize_shape",
                                          "crop_ratio",
                                          "crop_shape",
                                          "crop_is_random",
                                          "pretrained_backbone_weights",
                                          "use_group_norm",
                                          "spatial_softmax_num_keypoints",
                                          "use_separate_rgb_encoder_per_camera",
                                          "down_dims",
                                          "kernel_size",
                                          "n_groups",
                                          "diffusion_step_embed_dim",
                                          "use_film_scale_modulation",
                                          "gradient_checkpointing",
                                          "noise_scheduler_type",
                                          "num_train_timesteps",
                                          "beta_schedule",
                                          "beta_start",
                                          "beta_end",
                                          "prediction_type",
                                          "clip_sample",
                                          "clip_sample_range",
                                          "num_inference_steps",
                                          "compile_model",
                                          "compile_mode",
                                          "do_mask_loss_for_padding",
                                          "optimizer_lr",
                                          "optimizer_betas",
                                          "optimizer_eps",
                                          "optimizer_weight_decay",
                                          "scheduler_name",
                                          "scheduler_warmup_steps"};
  CHECK((order == expected));

  // HEAD's defaults (those the small config does not set).
  diffusion::DiffusionConfig d;
  CHECK(d.n_obs_steps == 2);
  CHECK(d.horizon == 64);
  CHECK(d.n_action_steps == 32);
  CHECK(d.drop_n_last_frames == 7);
  CHECK((d.down_dims == std::vector<int64_t>{512, 1024, 2048}));
  CHECK(d.use_separate_rgb_encoder_per_camera);
  CHECK_FALSE(d.use_group_norm);
  CHECK_FALSE(d.pretrained_backbone_weights.has_value());  // lrhost: no download, random init
  CHECK(c["normalization_mapping"] ==
        nlohmann::ordered_json({{"VISUAL", "MEAN_STD"}, {"STATE", "MIN_MAX"}, {"ACTION", "MIN_MAX"}}));
  CHECK(c["noise_scheduler_type"] == "DDPM");
  CHECK(c["beta_schedule"] == "squaredcos_cap_v2");
  CHECK(c["num_train_timesteps"] == 100);
  CHECK(c["optimizer_betas"] == ordered_json({0.95, 0.999}));
  CHECK(c["resize_shape"].is_null());
  CHECK(c["crop_shape"].is_null());
  CHECK(c["input_features"]["observation.images.cam0"]["shape"] == ordered_json({3, 64, 64}));

  // config.json -> policy -> the same config and the same weights' keys.
  auto rebuilt = make_policy(c, {});
  CHECK(rebuilt->config() == c);  // field order included: normalization_mapping keeps LeRobot's order
  CHECK(rebuilt->config()["input_features"].begin().key() == "observation.images.cam0");
  std::set<std::string> keys_a, keys_b;
  for (const auto& [k, t] : policy->state_dict()) keys_a.insert(k);
  for (const auto& [k, t] : rebuilt->state_dict()) keys_b.insert(k);
  CHECK((keys_a == keys_b));
  CHECK(keys_a.size() == policy->state_dict().size());
}

TEST_CASE("diffusion config: crop_shape follows resize_shape and crop_ratio as in HEAD's __post_init__") {
  auto features = make_features(2, 2, 1, 64, 64);
  auto derived = make_policy(small_config({{"resize_shape", {40, 50}}, {"crop_ratio", 0.9}}), features);
  CHECK(derived->config()["crop_shape"] == ordered_json({36, 45}));  // int(40 * 0.9), int(50 * 0.9)
  // crop_ratio 1.0 with a resize turns the crop off, whatever crop_shape said.
  auto no_crop = make_policy(small_config({{"resize_shape", {40, 50}}, {"crop_shape", {20, 20}}}), features);
  CHECK(no_crop->config()["crop_shape"].is_null());
  // Without a resize, crop_shape is used as given.
  auto crop = make_policy(small_config({{"crop_shape", {60, 56}}}), features);
  CHECK(crop->config()["crop_shape"] == ordered_json({60, 56}));
  // The pooling grid is sized from the trunk's input: a 60x56 crop gives a 2x2 layer4 map.
  CHECK((crop->model()->rgb_encoders()[0]->named_buffers()["pool.pos_grid"].sizes() == torch::IntArrayRef({4, 2})));
}

TEST_CASE("diffusion config: LeRobot's validation and lrhost's limits fail loudly") {
  auto features = make_features(2, 2, 1, 64, 64);
  auto has = [&](const json& overrides, const std::string& text, const PolicyFeatures* f = nullptr) {
    auto message = error_of(small_config(overrides), f ? *f : features);
    INFO(text);
    INFO(message);
    CHECK(message.find(text) != std::string::npos);
  };
  has({{"horizen", 8}}, "did you mean 'horizon'");
  has({{"horizon", "eight"}}, "'horizon' must be an integer");
  has({{"horizon", 10}}, "integer multiple of the U-Net's downsampling factor 2^len(down_dims) = 4");
  has({{"prediction_type", "v_prediction"}}, "'prediction_type' must be one of 'epsilon', 'sample'");
  has({{"noise_scheduler_type", "DPM"}}, "'noise_scheduler_type' must be one of 'DDPM', 'DDIM'");
  has({{"vision_backbone", "vit"}}, "must be one of the ResNet variants");
  has({{"vision_backbone", "resnet34"}}, "lrhost has 'resnet18' only");
  has({{"resize_shape", {0, 10}}}, "'resize_shape' must be a pair of positive integers");
  has({{"resize_shape", {10}}}, "'resize_shape' must be a pair of integers");
  has({{"crop_ratio", 0.0}}, "'crop_ratio' must be in (0, 1]");
  has({{"crop_shape", {0, 5}}}, "'crop_shape' must have positive dimensions");
  has({{"crop_shape", {65, 64}}}, "'crop_shape' should fit within the image shapes");
  has({{"num_inference_steps", 101}}, "'num_inference_steps' must be in [1, num_train_timesteps = 100]");
  has({{"n_groups", 5}}, "divisible by 'n_groups'");
  has({{"kernel_size", 4}}, "'kernel_size' must be a positive odd integer");
  has({{"n_action_steps", 8}}, "must be <= horizon - n_obs_steps + 1 = 7");
  has({{"beta_schedule", "cosine"}}, "'beta_schedule' must be one of");
  has({{"beta_schedule", "sigmoid"}, {"noise_scheduler_type", "DDIM"}}, "for the DDIM scheduler");
  has({{"pretrained_backbone_weights", "ResNet18_Weights.IMAGENET1K_V1"}},
      "can't replace BatchNorm in a pretrained model");
  has({{"pretrained_backbone_weights", "/some/file.safetensors"}}, "can't replace BatchNorm in a pretrained model");
  has({{"gradient_checkpointing", true}}, "'gradient_checkpointing' = true is not implemented");
  has({{"optimizer_betas", {0.9}}}, "'optimizer_betas' must be two numbers");

  auto two_shapes = make_features(2, 2, 2, 64, 64);
  two_shapes.inputs[2].shape = {3, 64, 48};
  has({}, "does not match 'observation.images.cam0'", &two_shapes);
  auto state_only = make_features(2, 2, 0, 0, 0);
  has({}, "at least one image or the environment state", &state_only);
  auto no_state = make_features(2, 2, 1, 64, 64);
  no_state.inputs.erase(no_state.inputs.begin());
  has({}, "'observation.state'", &no_state);
  auto gray = make_features(2, 2, 1, 64, 64);
  gray.inputs[1].shape = {1, 64, 64};
  has({}, "must have shape [3, H, W]", &gray);
  // A 32x32 input leaves a 1x1 layer4 map: BatchNorm cannot take its training-mode dry run.
  auto tiny = make_features(2, 2, 1, 32, 32);
  has({{"use_group_norm", false}}, "1x1 ResNet-18 feature map", &tiny);
}

// ---- noise schedulers ------------------------------------------------------------------------

TEST_CASE("noise scheduler: squaredcos_cap_v2 betas and alphas_cumprod") {
  diffusion::NoiseScheduler s({});
  const int64_t T = 100;
  REQUIRE((s.betas().sizes() == torch::IntArrayRef({T})));
  CHECK((s.betas().scalar_type() == torch::kFloat32));
  // Recomputed here from GLIDE's formula (alpha_bar(t) = cos((t + s) / (1 + s) * pi / 2)^2, s = 0.008).
  double product = 1.0;
  for (int64_t i = 0; i < T; ++i) {
    auto alpha_bar = [](double t) {
      double c = std::cos((t + 0.008) / 1.008 * std::numbers::pi / 2);
      return c * c;
    };
    double beta = std::min(1.0 - alpha_bar((i + 1.0) / T) / alpha_bar(static_cast<double>(i) / T), 0.999);
    CHECK(s.betas()[i].item<float>() == doctest::Approx(beta).epsilon(1e-6));
    product *= 1.0 - static_cast<double>(static_cast<float>(beta));
    CHECK(s.alphas_cumprod()[i].item<float>() == doctest::Approx(product).epsilon(2e-5));
  }
  // Hard numbers: diffusers' betas_for_alpha_bar evaluated by hand in Python with numpy
  //   ab = lambda t: math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
  //   b = np.array([min(1 - ab((i + 1) / 100) / ab(i / 100), 0.999) for i in range(100)]).astype(np.float32)
  //   ac = np.cumprod(1 - b, dtype=np.float32)
  CHECK(s.betas()[0].item<float>() == 0.00063128158217296f);
  CHECK(s.betas()[1].item<float>() == 0.0011169370263814926f);
  CHECK(s.betas()[50].item<float>() == 0.03154633939266205f);
  CHECK(s.betas()[98].item<float>() == 0.7499392628669739f);
  CHECK(s.betas()[99].item<float>() == 0.999f);  // capped
  CHECK(s.alphas_cumprod()[0].item<float>() == doctest::Approx(0.9993687272071838).epsilon(1e-6));
  CHECK(s.alphas_cumprod()[50].item<float>() == doctest::Approx(0.4782644212245941).epsilon(1e-6));
  CHECK(s.alphas_cumprod()[99].item<float>() == doctest::Approx(2.428540426535619e-07).epsilon(1e-5));
}

TEST_CASE("noise scheduler: linear and scaled_linear betas; unknown schedules are errors") {
  diffusion::NoiseSchedulerOptions o;
  o.beta_schedule = "linear";
  o.num_train_timesteps = 5;
  diffusion::NoiseScheduler linear(o);
  for (int i = 0; i < 5; ++i)
    CHECK(linear.betas()[i].item<float>() == doctest::Approx(0.0001 + i * (0.02 - 0.0001) / 4).epsilon(1e-6));
  o.beta_schedule = "scaled_linear";
  diffusion::NoiseScheduler scaled(o);
  for (int i = 0; i < 5; ++i) {
    double root = std::sqrt(0.0001) + i * (std::sqrt(0.02) - std::sqrt(0.0001)) / 4;
    CHECK(scaled.betas()[i].item<float>() == doctest::Approx(root * root).epsilon(1e-5));
  }
  o.beta_schedule = "cosine";
  CHECK_THROWS_AS(diffusion::NoiseScheduler{o}, ConfigError);
}

TEST_CASE("noise scheduler: leading timestep spacing and the previous timestep of each step") {
  diffusion::NoiseScheduler ddpm({});
  // Before set_timesteps: every training step, and t - 1.
  CHECK(ddpm.timesteps().size() == 100);
  CHECK(ddpm.timesteps().front() == 99);
  CHECK(ddpm.previous_timestep(40) == 39);
  ddpm.set_timesteps(100);
  CHECK(ddpm.timesteps().front() == 99);
  CHECK(ddpm.timesteps().back() == 0);
  ddpm.set_timesteps(10);
  CHECK((ddpm.timesteps() == std::vector<int64_t>{90, 80, 70, 60, 50, 40, 30, 20, 10, 0}));
  CHECK(ddpm.previous_timestep(90) == 80);
  CHECK(ddpm.previous_timestep(0) == -1);
  ddpm.set_timesteps(30);  // step ratio 100 // 30 = 3: 87, 84, ..., 0
  CHECK(ddpm.timesteps().size() == 30);
  CHECK(ddpm.timesteps().front() == 87);
  CHECK(ddpm.timesteps()[1] == 84);
  CHECK(ddpm.timesteps().back() == 0);
  CHECK_THROWS_AS(ddpm.set_timesteps(101), ConfigError);
  CHECK_THROWS_AS(ddpm.set_timesteps(0), ConfigError);

  diffusion::NoiseSchedulerOptions o;
  o.type = "DDIM";
  diffusion::NoiseScheduler ddim(o);
  ddim.set_timesteps(10);
  CHECK((ddim.timesteps() == std::vector<int64_t>{90, 80, 70, 60, 50, 40, 30, 20, 10, 0}));
  CHECK(ddim.previous_timestep(50) == 40);
}

TEST_CASE("noise scheduler: add_noise mixes sample and noise per batch row") {
  diffusion::NoiseScheduler s({});
  auto x = torch::randn({3, 4, 2});
  auto noise = torch::randn({3, 4, 2});
  auto t = torch::tensor({0, 50, 99}, torch::kLong);
  auto noisy = s.add_noise(x, noise, t);
  for (int i = 0; i < 3; ++i) {
    double acp = s.alphas_cumprod()[t[i].item<int64_t>()].item<double>();
    auto expected = x[i] * std::sqrt(acp) + noise[i] * std::sqrt(1 - acp);
    CHECK(max_abs_diff(noisy[i], expected) < 1e-6);
  }
}

TEST_CASE("noise scheduler: DDIM steps are deterministic and follow the DDIM update") {
  diffusion::NoiseSchedulerOptions o;
  o.type = "DDIM";
  o.clip_sample = false;
  diffusion::NoiseScheduler s(o);
  s.set_timesteps(10);
  auto sample = torch::randn({2, 8, 3});
  auto eps = torch::randn({2, 8, 3});
  torch::manual_seed(5);
  auto out = s.step(eps, 50, sample);
  auto after = torch::randn({4});
  torch::manual_seed(5);
  CHECK(torch::equal(after, torch::randn({4})));  // nothing drawn
  CHECK(torch::equal(out, s.step(eps, 50, sample)));
  double a_t = s.alphas_cumprod()[50].item<double>(), a_prev = s.alphas_cumprod()[40].item<double>();
  auto x0 = (sample - std::sqrt(1 - a_t) * eps) / std::sqrt(a_t);
  auto expected = std::sqrt(a_prev) * x0 + std::sqrt(1 - a_prev) * eps;
  CHECK(max_abs_diff(out, expected) < 1e-5);
  // The last step lands on alpha = 1: the predicted x0 itself.
  CHECK(max_abs_diff(s.step(eps, 0, sample), (sample - std::sqrt(1 - s.alphas_cumprod()[0].item<double>()) * eps) /
                                                 std::sqrt(s.alphas_cumprod()[0].item<double>())) < 1e-5);

  // Clipping of the predicted sample, with prediction_type "sample".
  o.clip_sample = true;
  o.clip_sample_range = 0.5;
  o.prediction_type = "sample";
  diffusion::NoiseScheduler clipped(o);
  clipped.set_timesteps(10);
  auto big = torch::full({1, 8, 3}, 3.0);
  // x0 is clipped; the noise estimate comes from the unclipped prediction, as in diffusers.
  auto expected_clipped = std::sqrt(a_prev) * 0.5 +
                          std::sqrt(1 - a_prev) * ((sample.slice(0, 0, 1) - std::sqrt(a_t) * big) / std::sqrt(1 - a_t));
  CHECK(max_abs_diff(clipped.step(big, 50, sample.slice(0, 0, 1)), expected_clipped) < 1e-5);
}

TEST_CASE("noise scheduler: DDPM steps draw one noise tensor per step but the last, and clip x0") {
  diffusion::NoiseScheduler s({});
  s.set_timesteps(10);
  auto sample = torch::randn({2, 8, 3});
  auto eps = torch::randn({2, 8, 3});
  // t > 0: the step equals the step with that draw given explicitly, and consumes exactly it.
  torch::manual_seed(3);
  auto drawn = s.step(eps, 50, sample);
  auto next = torch::randn({1});
  torch::manual_seed(3);
  auto noise = torch::randn({2, 8, 3});
  CHECK(torch::equal(drawn, s.step(eps, 50, sample, noise)));
  CHECK(torch::equal(next, torch::randn({1})));
  CHECK((drawn.sizes() == sample.sizes()));
  // Posterior mean plus sqrt(fixed_small variance) * noise, x0 clipped to [-1, 1].
  double a_t = s.alphas_cumprod()[50].item<double>(), a_prev = s.alphas_cumprod()[40].item<double>();
  double beta_t = 1 - a_t / a_prev;
  auto x0 = ((sample - std::sqrt(1 - a_t) * eps) / std::sqrt(a_t)).clamp(-1, 1);
  auto mean =
      (std::sqrt(a_prev) * beta_t / (1 - a_t)) * x0 + (std::sqrt(1 - beta_t) * (1 - a_prev) / (1 - a_t)) * sample;
  auto expected = mean + std::sqrt((1 - a_prev) / (1 - a_t) * beta_t) * noise;
  CHECK(max_abs_diff(drawn, expected) < 1e-5);
  // t = 0: no noise, deterministic.
  torch::manual_seed(4);
  auto last = s.step(eps, 0, sample);
  auto after = torch::randn({1});
  torch::manual_seed(4);
  CHECK(torch::equal(after, torch::randn({1})));
  double a0 = s.alphas_cumprod()[0].item<double>();
  auto x0_last = ((sample - std::sqrt(1 - a0) * eps) / std::sqrt(a0)).clamp(-1, 1);
  CHECK(max_abs_diff(last, std::sqrt(1.0) * (1 - a0) / (1 - a0) * x0_last) < 1e-5);
  CHECK(last.abs().max().item<float>() <= 1.0f);
}

// ---- module tree ---------------------------------------------------------------------------

TEST_CASE("diffusion: HEAD's default model has LeRobot's 273 tensors, 262.7M elements, 212 parameters") {
  // 2-D state/action, one 96x96 camera: the example in the reference notes. Built once; no forward.
  auto policy = make_policy({{"type", "diffusion"}}, make_features(2, 2, 1, 96, 96));
  auto state = policy->state_dict();
  int64_t elements = 0;
  for (const auto& [k, t] : state) elements += t.numel();
  CHECK(state.size() == 273);
  CHECK(elements == 262718664);
  CHECK(policy->named_parameters().size() == 212);
  Arch a;  // HEAD defaults; the 96x96 image gives a 3x3 layer4 map
  check_keys(*policy, lerobot_keys(a));
  // LeRobot sizes the pooling with a training-mode pass on zeros, which moves BatchNorm's statistics.
  auto buffers = policy->named_buffers();
  CHECK(buffers["diffusion.rgb_encoder.0.backbone.1.num_batches_tracked"].item<int64_t>() == 1);
  CHECK(buffers["diffusion.rgb_encoder.0.backbone.7.1.bn2.running_var"][0].item<float>() == doctest::Approx(0.9));
  // FSDP wrap units: the residual blocks (2 per level, 2 mid, 2 per decoder level).
  int blocks = 0;
  for (const auto& module : policy->modules())
    if (lrhost::policy::module_type_name(*module) == "DiffusionConditionalResidualBlock1d") ++blocks;
  CHECK(blocks == 6 + 2 + 4);
  CHECK((policy->fsdp_wrap_module_types() == std::vector<std::string>{"DiffusionConditionalResidualBlock1d"}));
}

TEST_CASE("diffusion: small variants have LeRobot's keys (shared/separate encoders, GroupNorm, env state, crop)") {
  Arch a;
  a.dims = {32, 64};
  a.kernel = 3;
  a.embed = 32;
  a.keypoints = 8;
  SUBCASE("GroupNorm, two cameras, one shared encoder") {
    auto policy =
        make_policy(small_config({{"use_separate_rgb_encoder_per_camera", false}}), make_features(3, 2, 2, 32, 32));
    Arch b = a;
    b.state = 3, b.cameras = 2, b.separate = false, b.group_norm = true, b.map_h = 1, b.map_w = 1;
    check_keys(*policy, lerobot_keys(b));
  }
  SUBCASE("BatchNorm, two cameras, separate encoders, env state, no scale modulation") {
    auto policy = make_policy(small_config({{"use_group_norm", false}, {"use_film_scale_modulation", false}}),
                              make_features(2, 3, 2, 64, 64, 5));
    Arch b = a;
    b.action = 3, b.cameras = 2, b.env = 5, b.map_h = 2, b.map_w = 2, b.film_scale = false;
    check_keys(*policy, lerobot_keys(b));
  }
  SUBCASE("environment state only: no rgb_encoder") {
    auto policy = make_policy(small_config({{"n_obs_steps", 1}}), make_features(2, 2, 0, 0, 0, 4));
    Arch b = a;
    b.cameras = 0, b.env = 4, b.n_obs = 1;
    check_keys(*policy, lerobot_keys(b));
  }
  SUBCASE("crop_shape sizes the pooling grid; three U-Net levels") {
    auto policy = make_policy(small_config({{"crop_shape", {84, 70}}, {"down_dims", {16, 32, 64}}}),
                              make_features(2, 2, 1, 96, 96));
    Arch b = a;
    b.group_norm = true, b.map_h = 3, b.map_w = 3, b.dims = {16, 32, 64};
    check_keys(*policy, lerobot_keys(b));
  }
}

// ---- loss ----------------------------------------------------------------------------------

TEST_CASE("diffusion: forward gives a finite loss whose gradient reaches every parameter") {
  auto features = make_features(2, 2, 2, 32, 32, 3);
  auto policy = make_policy(small_config(), features);
  policy->train();
  auto batch = make_batch(features, 3, 2, 8);
  auto out = policy->forward(batch);
  CHECK(out.loss.dim() == 0);
  CHECK(std::isfinite(out.loss.item<double>()));
  // LeRobot returns no output dict; lrhost adds each sample's loss (a mixture's loss/<name>), whose
  // mean is the loss (every sample has the same number of elements).
  REQUIRE(out.parts.size() == 1);
  CHECK(out.parts.at("loss_per_sample").sizes().vec() == std::vector<int64_t>{3});
  CHECK(out.parts.at("loss_per_sample").mean().item<double>() ==
        doctest::Approx(out.loss.item<double>()).epsilon(1e-5));
  out.loss.backward();
  for (const auto& item : policy->named_parameters()) {
    INFO(item.key());
    REQUIRE(item.value().grad().defined());
    CHECK(std::isfinite(item.value().grad().abs().sum().item<double>()));
  }
  // Missing inputs name the key.
  auto no_pad = batch;
  no_pad.erase("action_is_pad");
  CHECK_THROWS_WITH_AS(policy->forward(no_pad), doctest::Contains("'action_is_pad'"), ConfigError);
  auto short_horizon = batch;
  short_horizon["action"] = batch["action"].slice(1, 0, 4);
  CHECK_THROWS_AS(policy->forward(short_horizon), lrhost::util::DataError);
}

TEST_CASE("diffusion: the loss draws its noise, then its timesteps, as LeRobot does") {
  auto features = make_features(2, 2, 1, 32, 32);
  auto policy = make_policy(small_config(), features);  // GroupNorm, no crop: no other draws
  policy->train();
  auto batch = make_batch(features, 4, 2, 8);
  torch::manual_seed(42);
  auto loss = policy->forward(batch).loss;
  auto after = torch::randn({1});
  torch::manual_seed(42);
  auto noise = torch::randn({4, 8, 2});
  auto timesteps = torch::randint(0, 100, {4}, torch::kLong);
  CHECK(torch::equal(after, torch::randn({1})));
  CHECK(policy->compute_loss(batch, noise, timesteps).item<float>() == loss.item<float>());

  // The loss is the MSE between the U-Net's output on the noised actions and the noise.
  auto& model = policy->model();
  Batch stacked = batch;
  stacked["observation.images"] = torch::stack({batch["observation.images.cam0"]}, -4);
  auto cond = model->prepare_global_conditioning(stacked);
  CHECK((cond.sizes() == torch::IntArrayRef({4, 2 * (2 + 16)})));
  auto noisy = model->noise_scheduler().add_noise(batch["action"], noise, timesteps);
  auto pred = model->unet()->forward(noisy, timesteps, cond);
  CHECK(loss.item<float>() == doctest::Approx((pred - noise).pow(2).mean().item<float>()).epsilon(1e-6));
}

TEST_CASE("diffusion: the padding mask averages over real action steps only when enabled") {
  auto features = make_features(2, 2, 1, 32, 32);
  auto batch = make_batch(features, 2, 2, 8);
  batch["action_is_pad"][0].slice(0, 5).fill_(true);
  auto noise = torch::randn({2, 8, 2});
  auto timesteps = torch::tensor({10, 60}, torch::kLong);
  for (bool mask : {false, true}) {
    torch::manual_seed(1);
    auto policy = make_policy(small_config({{"do_mask_loss_for_padding", mask}}), features);
    policy->eval();
    auto loss = policy->compute_loss(batch, noise, timesteps);
    auto& model = policy->model();
    Batch stacked = batch;
    stacked["observation.images"] = torch::stack({batch["observation.images.cam0"]}, -4);
    auto pred = model->unet()->forward(model->noise_scheduler().add_noise(batch["action"], noise, timesteps), timesteps,
                                       model->prepare_global_conditioning(stacked));
    auto squared = (pred - noise).pow(2);
    if (mask) {
      auto valid = batch["action_is_pad"].logical_not().unsqueeze(-1).to(torch::kFloat32);
      auto expected = (squared * valid).sum() / (valid.sum() * 2);  // 13 real steps x 2 dims
      CHECK(loss.item<float>() == doctest::Approx(expected.item<float>()).epsilon(1e-6));
      CHECK(loss.item<float>() != doctest::Approx(squared.mean().item<float>()).epsilon(1e-6));
    } else {
      CHECK(loss.item<float>() == doctest::Approx(squared.mean().item<float>()).epsilon(1e-6));
    }
  }
}

TEST_CASE("diffusion: random crops draw torchvision's two offsets in training, centre crops in eval") {
  auto features = make_features(2, 2, 1, 40, 40);
  auto policy = make_policy(small_config({{"crop_shape", {34, 36}}}), features);  // GroupNorm: train = eval
  auto encoder = policy->model()->rgb_encoders()[0];
  auto x = torch::rand({2, 3, 40, 40});
  encoder->train();
  torch::manual_seed(9);
  auto trained = encoder->forward(x);
  torch::manual_seed(9);
  auto top = torch::randint(0, 40 - 34 + 1, {1}).item<int64_t>();
  auto left = torch::randint(0, 40 - 36 + 1, {1}).item<int64_t>();
  encoder->eval();
  auto cropped = x.slice(2, top, top + 34).slice(3, left, left + 36);
  CHECK(torch::allclose(trained, encoder->forward(cropped), 1e-5, 1e-6));
  // Eval: the centre (Python's round half to even of (40 - 34) / 2 = 3 and (40 - 36) / 2 = 2), no draw.
  torch::manual_seed(10);
  auto centre = encoder->forward(x);
  auto after = torch::randn({1});
  torch::manual_seed(10);
  CHECK(torch::equal(after, torch::randn({1})));
  CHECK(torch::allclose(centre, encoder->forward(x.slice(2, 3, 37).slice(3, 2, 38)), 1e-5, 1e-6));
}

// ---- inference -----------------------------------------------------------------------------

TEST_CASE("diffusion: sampling denoises from the given noise; generate_actions keeps the executed steps") {
  auto features = make_features(2, 2, 1, 32, 32);
  for (std::string scheduler : {"DDPM", "DDIM"}) {
    auto policy = make_policy(small_config({{"noise_scheduler_type", scheduler}}), features);
    policy->eval();
    auto batch = make_batch(features, 2, 2, 8);
    auto noise = torch::randn({2, 8, 2});
    torch::NoGradGuard no_grad;
    torch::manual_seed(3);
    auto chunk = policy->predict_action_chunk(batch, noise);
    CHECK((chunk.sizes() == torch::IntArrayRef({2, 4, 2})));
    CHECK(chunk.abs().max().item<float>() <= 1.0f + 1e-6f);  // the last step returns a clipped x0
    auto& model = policy->model();
    Batch stacked = batch;
    stacked["observation.images"] = torch::stack({batch["observation.images.cam0"]}, -4);
    torch::manual_seed(3);
    auto full = model->conditional_sample(2, model->prepare_global_conditioning(stacked), noise);
    CHECK(torch::equal(chunk, full.slice(1, 1, 5)));  // from the current observation: n_obs - 1
    torch::manual_seed(4);
    auto again = policy->predict_action_chunk(batch, noise);
    CHECK(torch::equal(chunk, again) == (scheduler == "DDIM"));  // DDPM adds fresh noise per step
  }
}

TEST_CASE("diffusion: select_action fills the observation window, then pops a chunk of n_action_steps") {
  auto features = make_features(2, 2, 1, 32, 32);
  auto policy = make_policy(small_config({{"noise_scheduler_type", "DDIM"}}), features);
  policy->eval();
  Batch frame{{"observation.state", torch::randn({2, 2})}, {"observation.images.cam0", torch::rand({2, 3, 32, 32})}};
  auto noise = torch::randn({2, 8, 2});
  auto first = policy->select_action(frame, noise);
  CHECK((first.sizes() == torch::IntArrayRef({2, 2})));
  CHECK(policy->observation_queue_size("observation.state") == 2);  // the first frame fills the window
  CHECK(policy->observation_queue_size("observation.images") == 2);
  CHECK(policy->action_queue_size() == 3);
  // The same as the chunk predicted from a window of the repeated frame.
  Batch window{{"observation.state", torch::stack({frame["observation.state"], frame["observation.state"]}, 1)},
               {"observation.images.cam0",
                torch::stack({frame["observation.images.cam0"], frame["observation.images.cam0"]}, 1)}};
  policy->reset();
  CHECK(policy->observation_queue_size("observation.state") == 0);
  auto chunk = policy->predict_action_chunk(window, noise);
  CHECK(torch::equal(first, chunk.select(1, 0)));

  // Then the queue is consumed step by step; the fifth call predicts from the last two frames.
  policy->reset();
  std::vector<torch::Tensor> actions;
  std::vector<Batch> frames;
  for (int step = 0; step < 5; ++step) {
    Batch f{{"observation.state", torch::randn({2, 2})},
            {"observation.images.cam0", torch::rand({2, 3, 32, 32})},
            {"action", torch::zeros({2, 2})}};  // ignored, as in LeRobot's offline evaluation
    frames.push_back(f);
    actions.push_back(policy->select_action(f, noise));
  }
  CHECK(policy->action_queue_size() == 3);
  for (int step = 1; step < 4; ++step) CHECK_FALSE(torch::equal(actions[0], actions[step]));
  Batch last_two{
      {"observation.state", torch::stack({frames[3]["observation.state"], frames[4]["observation.state"]}, 1)},
      {"observation.images.cam0",
       torch::stack({frames[3]["observation.images.cam0"], frames[4]["observation.images.cam0"]}, 1)}};
  policy->reset();
  CHECK(torch::equal(actions[4], policy->predict_action_chunk(last_two, noise).select(1, 0)));
}

TEST_CASE("diffusion: n_obs_steps 1 accepts single frames in training and inference") {
  auto features = make_features(2, 2, 1, 32, 32);
  auto policy = make_policy(small_config({{"n_obs_steps", 1}, {"n_action_steps", 8}}), features);
  Batch batch{{"observation.state", torch::randn({3, 2})},
              {"observation.images.cam0", torch::rand({3, 3, 32, 32})},
              {"action", torch::randn({3, 8, 2})},
              {"action_is_pad", torch::zeros({3, 8}, torch::kBool)}};
  CHECK(std::isfinite(policy->forward(batch).loss.item<double>()));
  policy->eval();
  CHECK((policy->predict_action_chunk(batch).sizes() == torch::IntArrayRef({3, 8, 2})));
  CHECK(policy->delta_indices()["action"].front() == 0);
}

// ---- presets and weights -------------------------------------------------------------------

TEST_CASE("diffusion: LeRobot's presets, normalization and delta indices") {
  auto policy = make_policy(small_config(), make_features(2, 2, 1, 32, 32, 3));
  CHECK(policy->type() == "diffusion");
  auto opt = policy->optimizer_preset();
  CHECK(opt["type"] == "adam");
  CHECK(opt["lr"].get<double>() == 1e-4);
  CHECK(opt["betas"] == ordered_json({0.95, 0.999}));
  CHECK(opt["eps"].get<double>() == 1e-8);
  CHECK(opt["weight_decay"].get<double>() == 1e-6);
  CHECK(opt["grad_clip_norm"].get<double>() == 10.0);
  CHECK(policy->scheduler_preset() == ordered_json({{"type", "cosine_with_warmup"}, {"warmup_steps", 500}}));
  CHECK((policy->normalization_mapping() ==
         std::map<std::string, std::string>{{"VISUAL", "MEAN_STD"}, {"STATE", "MIN_MAX"}, {"ACTION", "MIN_MAX"}}));
  auto deltas = policy->delta_indices();
  CHECK((deltas["observation.state"] == std::vector<int64_t>{-1, 0}));
  CHECK((deltas["observation.images.cam0"] == std::vector<int64_t>{-1, 0}));
  CHECK((deltas["observation.environment_state"] == std::vector<int64_t>{-1, 0}));
  CHECK((deltas["action"] == std::vector<int64_t>{-1, 0, 1, 2, 3, 4, 5, 6}));
  CHECK(deltas.size() == 4);
  // One optimizer group holding every parameter, in named_parameters() order.
  auto groups = policy->param_groups();
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].params.size() == policy->parameters().size());
  CHECK(groups[0].params.front().is_same(policy->parameters().front()));

  auto linear = make_policy(small_config({{"scheduler_name", "linear"}, {"scheduler_warmup_steps", 7}}),
                            make_features(2, 2, 1, 32, 32));
  CHECK(linear->scheduler_preset() == ordered_json({{"type", "linear_with_warmup"}, {"warmup_steps", 7}}));
  auto odd = make_policy(small_config({{"scheduler_name", "cosine_with_restarts"}}), make_features(2, 2, 1, 32, 32));
  CHECK_THROWS_AS(odd->scheduler_preset(), lrhost::util::NotImplemented);
}

TEST_CASE("diffusion: pretrained_backbone_weights loads a torchvision resnet18 safetensors into every encoder") {
  lrhost::test::TempDir dir("diffusion_backbone");
  lrhost::policy::vision::ResNet18 source(
      lrhost::policy::vision::ResNet18Options{lrhost::policy::vision::NormKind::BatchNorm, false});
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : source->named_parameters()) tensors.emplace_back(item.key(), item.value().detach());
  for (const auto& item : source->named_buffers()) tensors.emplace_back(item.key(), item.value());
  auto file = dir / "resnet18.safetensors";
  lrhost::io::write_safetensors(file, tensors);
  auto policy = make_policy(small_config({{"use_group_norm", false}, {"pretrained_backbone_weights", file.string()}}),
                            make_features(2, 2, 2, 64, 64));
  auto params = policy->named_parameters();
  for (std::string cam : {"0", "1"}) {
    CHECK(torch::equal(params["diffusion.rgb_encoder." + cam + ".backbone.0.weight"],
                       source->named_parameters()["conv1.weight"]));
    CHECK(torch::equal(params["diffusion.rgb_encoder." + cam + ".backbone.7.1.conv2.weight"],
                       source->named_parameters()["layer4.1.conv2.weight"]));
  }
  CHECK(policy->config()["pretrained_backbone_weights"] == file.string());
  auto missing = error_of(
      small_config({{"use_group_norm", false}, {"pretrained_backbone_weights", (dir / "none.safetensors").string()}}),
      make_features(2, 2, 1, 64, 64));
  CHECK(missing.find("none.safetensors") != std::string::npos);
}
