// Unit tests of host/policy/act: the state_dict layout against LeRobot HEAD's table (keys, shapes,
// dtypes, parameter order = optimizer indices), the building blocks against independent
// computations (attention vs LibTorch's MultiheadAttention, position embeddings vs their formulas,
// loss parts vs explicit sums, temporal ensembling vs the offline weighted average), random draws,
// inference queues, config reading/validation/round trip and backbone weight files.
#include <doctest/doctest.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>

#include "host/io/safetensors.hpp"
#include "host/policy/act/act_attention.hpp"
#include "host/policy/act/act_policy.hpp"
#include "host/policy/act/act_sinusoid.hpp"
#include "host/policy/act/act_temporal_ensembler.hpp"
#include "host/policy/fast_paths.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/vision/resnet18.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;

using lrhost::policy::Batch;
using lrhost::policy::create_policy;
using lrhost::policy::PolicyFeatures;
using lrhost::policy::act::ACTPolicy;
using nlohmann::json;

namespace {

using Shape = std::vector<int64_t>;
using KeyList = std::vector<std::pair<std::string, Shape>>;

// The dimensions a state_dict table depends on (0 = feature absent).
struct Dims {
  int64_t dim = 512, ff = 3200, latent = 32, state = 14, env = 0, action = 14, chunk = 100;
  int64_t n_enc = 4, n_dec = 1, n_vae = 4;
  bool vae = true, cameras = true, pre_norm = false;
};

struct Table {
  KeyList params;  // in PyTorch named_parameters() order
  std::map<std::string, Shape> buffers;
};

// LeRobot's ACT state_dict (../shared/reference/lerobot.md §4.1), generated in ACT.__init__'s
// attribute order so the parameter list is also the optimizer index order.
Table expected_table(const Dims& d) {
  Table t;
  auto param = [&](const std::string& key, Shape shape) { t.params.emplace_back("model." + key, std::move(shape)); };
  auto buffer = [&](const std::string& key, Shape shape) { t.buffers["model." + key] = std::move(shape); };
  auto linear = [&](const std::string& p, int64_t out, int64_t in) {
    param(p + ".weight", {out, in});
    param(p + ".bias", {out});
  };
  auto norm = [&](const std::string& p) {
    param(p + ".weight", {d.dim});
    param(p + ".bias", {d.dim});
  };
  auto attention = [&](const std::string& p) {
    param(p + ".in_proj_weight", {3 * d.dim, d.dim});
    param(p + ".in_proj_bias", {3 * d.dim});
    linear(p + ".out_proj", d.dim, d.dim);
  };
  auto encoder = [&](const std::string& p, int64_t layers) {
    for (int64_t i = 0; i < layers; ++i) {
      auto l = p + ".layers." + std::to_string(i);
      attention(l + ".self_attn");
      linear(l + ".linear1", d.ff, d.dim);
      linear(l + ".linear2", d.dim, d.ff);
      norm(l + ".norm1");
      norm(l + ".norm2");
    }
    if (d.pre_norm) norm(p + ".norm");
  };
  auto frozen_bn = [&](const std::string& p, int64_t c) {
    for (const char* name : {"weight", "bias", "running_mean", "running_var"}) buffer(p + "." + name, {c});
  };
  if (d.vae) {
    encoder("vae_encoder", d.n_vae);
    param("vae_encoder_cls_embed.weight", {1, d.dim});
    if (d.state) linear("vae_encoder_robot_state_input_proj", d.dim, d.state);
    linear("vae_encoder_action_input_proj", d.dim, d.action);
    linear("vae_encoder_latent_output_proj", 2 * d.latent, d.dim);
    buffer("vae_encoder_pos_enc", {1, 1 + d.chunk + (d.state ? 1 : 0), d.dim});
  }
  if (d.cameras) {
    param("backbone.conv1.weight", {64, 3, 7, 7});
    frozen_bn("backbone.bn1", 64);
    const int64_t channels[] = {64, 128, 256, 512};
    for (int layer = 1; layer <= 4; ++layer) {
      const int64_t out = channels[layer - 1], in = layer == 1 ? 64 : channels[layer - 2];
      for (int block = 0; block < 2; ++block) {
        auto p = "backbone.layer" + std::to_string(layer) + "." + std::to_string(block);
        param(p + ".conv1.weight", {out, block == 0 ? in : out, 3, 3});
        frozen_bn(p + ".bn1", out);
        param(p + ".conv2.weight", {out, out, 3, 3});
        frozen_bn(p + ".bn2", out);
        if (block == 0 && layer > 1) {
          param(p + ".downsample.0.weight", {out, in, 1, 1});
          frozen_bn(p + ".downsample.1", out);
        }
      }
    }
  }
  encoder("encoder", d.n_enc);
  for (int64_t i = 0; i < d.n_dec; ++i) {
    auto l = "decoder.layers." + std::to_string(i);
    attention(l + ".self_attn");
    attention(l + ".multihead_attn");
    linear(l + ".linear1", d.ff, d.dim);
    linear(l + ".linear2", d.dim, d.ff);
    norm(l + ".norm1");
    norm(l + ".norm2");
    norm(l + ".norm3");
  }
  norm("decoder.norm");
  if (d.state) linear("encoder_robot_state_input_proj", d.dim, d.state);
  if (d.env) linear("encoder_env_state_input_proj", d.dim, d.env);
  linear("encoder_latent_input_proj", d.dim, d.latent);
  if (d.cameras) {
    param("encoder_img_feat_input_proj.weight", {d.dim, 512, 1, 1});
    param("encoder_img_feat_input_proj.bias", {d.dim});
  }
  param("encoder_1d_feature_pos_embed.weight", {1 + (d.state ? 1 : 0) + (d.env ? 1 : 0), d.dim});
  param("decoder_pos_embed.weight", {d.chunk, d.dim});
  linear("action_head", d.action, d.dim);
  return t;
}

Table actual_table(const lrhost::policy::Policy& policy) {
  Table t;
  for (const auto& item : policy.named_parameters()) t.params.emplace_back(item.key(), item.value().sizes().vec());
  for (const auto& item : policy.named_buffers()) t.buffers[item.key()] = item.value().sizes().vec();
  return t;
}

void check_table(const lrhost::policy::Policy& policy, const Dims& dims) {
  auto expected = expected_table(dims);
  auto actual = actual_table(policy);
  REQUIRE(actual.params.size() == expected.params.size());
  for (size_t i = 0; i < expected.params.size(); ++i) {
    INFO("parameter #" << i << " expected " << expected.params[i].first);
    CHECK(actual.params[i].first == expected.params[i].first);
    CHECK((actual.params[i].second == expected.params[i].second));
  }
  CHECK((actual.buffers == expected.buffers));
  for (const auto& [key, tensor] : policy.state_dict()) {
    INFO(key);
    CHECK((tensor.scalar_type() == torch::kFloat32));
  }
}

// Features in the order a dataset lists them: cameras, then state, env state; action output.
PolicyFeatures make_features(int64_t state, int64_t env, int cameras, int64_t action = 14, Shape image = {3, 64, 64}) {
  PolicyFeatures f;
  for (int i = 0; i < cameras; ++i) f.inputs.push_back({"observation.images.cam" + std::to_string(i), "VISUAL", image});
  if (state) f.inputs.push_back({"observation.state", "STATE", {state}});
  if (env) f.inputs.push_back({"observation.environment_state", "ENV", {env}});
  f.outputs.push_back({"action", "ACTION", {action}});
  return f;
}

// A small ACT: dim 32, 4 heads, chunk 5 (every forward still runs the full ResNet-18 trunk).
json tiny(json extra = json::object()) {
  json c{{"type", "act"},         {"dim_model", 32},           {"n_heads", 4},        {"dim_feedforward", 64},
         {"latent_dim", 8},       {"chunk_size", 5},           {"n_action_steps", 5}, {"n_encoder_layers", 2},
         {"n_decoder_layers", 1}, {"n_vae_encoder_layers", 2}, {"dropout", 0.0}};
  c.update(extra);
  return c;
}

std::shared_ptr<ACTPolicy> make_act(const json& config, const PolicyFeatures& features) {
  auto policy = std::dynamic_pointer_cast<ACTPolicy>(create_policy(config, features));
  REQUIRE(policy);
  return policy;
}

// Random inputs for every configured feature; sample 0 has its last two action steps padded.
Batch make_batch(const ACTPolicy& policy, int64_t batch_size) {
  const auto& c = policy.act_config();
  Batch batch;
  for (const auto& f : c.input_features) {
    Shape shape{batch_size};
    shape.insert(shape.end(), f.shape.begin(), f.shape.end());
    batch[f.key] = f.type == "VISUAL" ? torch::rand(shape) : torch::randn(shape);
  }
  const int64_t action_dim = c.action_feature()->shape[0];
  batch["action"] = torch::randn({batch_size, c.chunk_size, action_dim});
  auto pad = torch::zeros({batch_size, c.chunk_size}, torch::kBool);
  pad.index_put_({0, torch::indexing::Slice(c.chunk_size - 2, torch::indexing::None)}, true);
  batch["action_is_pad"] = pad;
  return batch;
}

std::vector<torch::Tensor> images_of(const ACTPolicy& policy, const Batch& batch) {
  std::vector<torch::Tensor> images;
  for (const auto& f : policy.act_config().image_features()) images.push_back(batch.at(f.key));
  return images;
}

// The message of the error building this config throws ("" if none): ConfigError, NotImplemented,
// DataError and IoError are the user-facing kinds here.
template <typename Error = lrhost::util::ConfigError>
std::string error_of(const json& config, const PolicyFeatures& features = make_features(14, 0, 1)) {
  try {
    create_policy(config, features);
  } catch (const Error& e) {
    return lrhost::util::describe(e);
  }
  return "";
}

}  // namespace

TEST_CASE("act with LeRobot's defaults has HEAD's 234-key state_dict, parameter order and groups") {
  // 14-D state, 14-D action, one camera: the configuration of the reference table.
  auto policy = make_act({{"type", "act"}}, make_features(14, 0, 1, 14, {3, 480, 640}));
  check_table(*policy, Dims{});
  auto state = policy->state_dict();
  CHECK(state.size() == 234);
  int64_t elements = 0;
  for (const auto& [key, tensor] : state) elements += tensor.numel();
  CHECK(elements == 51'685'006);
  auto named = policy->named_parameters();
  CHECK(named.size() == 153);

  auto groups = policy->param_groups();
  REQUIRE(groups.size() == 2);
  REQUIRE(groups[0].params.size() == 133);
  REQUIRE(groups[1].params.size() == 20);
  CHECK(groups[0].params.front().is_same(named["model.vae_encoder.layers.0.self_attn.in_proj_weight"]));
  CHECK(groups[0].params.back().is_same(named["model.action_head.bias"]));
  CHECK(groups[1].params.front().is_same(named["model.backbone.conv1.weight"]));
  CHECK(groups[1].params.back().is_same(named["model.backbone.layer4.1.conv2.weight"]));
  CHECK(!groups[0].lr.has_value());
  REQUIRE(groups[1].lr.has_value());
  CHECK(*groups[1].lr == doctest::Approx(1e-5));
  // Groups keep named_parameters() order (optimizer state indices follow it).
  size_t main_index = 0, backbone_index = 0;
  for (const auto& item : named) {
    bool backbone = item.key().rfind("model.backbone", 0) == 0;
    auto& group = backbone ? groups[1] : groups[0];
    auto& index = backbone ? backbone_index : main_index;
    CHECK(group.params.at(index++).is_same(item.value()));
  }

  // The VAE encoder's fixed position table is LeRobot's sinusoid over [cls, state, 100 actions].
  auto buffers = policy->named_buffers();
  CHECK(torch::equal(buffers["model.vae_encoder_pos_enc"],
                     lrhost::policy::act::sinusoidal_pos_embedding_1d(102, 512).unsqueeze(0)));

  // Presets and the rest of the policy interface.
  auto preset = policy->optimizer_preset();
  CHECK(preset["type"] == "adamw");
  CHECK(preset["lr"].get<double>() == doctest::Approx(1e-5));
  CHECK(preset["weight_decay"].get<double>() == doctest::Approx(1e-4));
  CHECK(json(preset["betas"]) == json({0.9, 0.999}));
  CHECK(preset["eps"].get<double>() == doctest::Approx(1e-8));
  CHECK(preset["grad_clip_norm"].get<double>() == doctest::Approx(10.0));
  CHECK(policy->scheduler_preset().is_null());
  CHECK((policy->normalization_mapping() ==
         std::map<std::string, std::string>{{"VISUAL", "MEAN_STD"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}}));
  auto deltas = policy->delta_indices();
  REQUIRE(deltas.size() == 1);
  REQUIRE(deltas["action"].size() == 100);
  for (int64_t i = 0; i < 100; ++i) CHECK(deltas["action"][static_cast<size_t>(i)] == i);
  CHECK((policy->fsdp_wrap_module_types() == std::vector<std::string>{"ACTEncoderLayer", "ACTDecoderLayer"}));
  std::map<std::string, int> type_counts;
  for (const auto& module : policy->modules(/*include_self=*/false))
    ++type_counts[lrhost::policy::module_type_name(*module)];
  CHECK(type_counts["ACTEncoderLayer"] == 8);  // 4 VAE encoder + 4 encoder layers
  CHECK(type_counts["ACTDecoderLayer"] == 1);
}

TEST_CASE("act state_dict variants: env state without robot state, no VAE, pre-norm, two cameras") {
  Dims small;
  small.dim = 32, small.ff = 64, small.latent = 8, small.chunk = 5, small.n_enc = 2, small.n_vae = 2;

  SUBCASE("environment state only, no robot state, no camera") {
    auto policy = make_act(tiny(), make_features(0, 7, 0, 3));
    Dims d = small;
    d.state = 0, d.env = 7, d.action = 3, d.cameras = false;
    check_table(*policy, d);
    CHECK(policy->param_groups().size() == 1);  // no backbone group without cameras
  }
  SUBCASE("use_vae = false drops every vae_* entry") {
    auto policy = make_act(tiny({{"use_vae", false}}), make_features(6, 0, 1, 4));
    Dims d = small;
    d.vae = false, d.state = 6, d.action = 4;
    check_table(*policy, d);
    for (const auto& [key, tensor] : policy->state_dict()) CHECK(!contains(key, "vae_"));
  }
  SUBCASE("pre_norm adds the encoders' final norms") {
    auto policy = make_act(tiny({{"pre_norm", true}}), make_features(6, 2, 1, 4));
    Dims d = small;
    d.state = 6, d.env = 2, d.action = 4, d.pre_norm = true;
    check_table(*policy, d);
  }
  SUBCASE("two cameras share one backbone") {
    auto policy = make_act(tiny(), make_features(6, 0, 2, 4));
    Dims d = small;
    d.state = 6, d.action = 4;
    check_table(*policy, d);
  }
}

TEST_CASE("act attention computes what LibTorch's MultiheadAttention computes") {
  torch::manual_seed(3);
  lrhost::policy::act::MultiheadAttention mine(16, 4, 0.0);
  torch::nn::MultiheadAttention reference(torch::nn::MultiheadAttentionOptions(16, 4));
  {
    torch::NoGradGuard no_grad;
    reference->in_proj_weight.copy_(mine->in_proj_weight);
    mine->in_proj_bias.normal_();  // PyTorch zeroes it at init; use non-zero values to test it
    reference->in_proj_bias.copy_(mine->in_proj_bias);
    mine->out_proj->bias.normal_();
    reference->out_proj->weight.copy_(mine->out_proj->weight);
    reference->out_proj->bias.copy_(mine->out_proj->bias);
  }
  auto query = torch::randn({5, 2, 16}), key = torch::randn({7, 2, 16}), value = torch::randn({7, 2, 16});
  auto mask = torch::zeros({2, 7}, torch::kBool);
  mask.index_put_({1, torch::indexing::Slice(4, torch::indexing::None)}, true);
  auto expected = std::get<0>(reference->forward(query, key, value, mask));
  CHECK(torch::allclose(mine->forward(query, key, value, mask), expected, 1e-5, 1e-6));
  auto unmasked = std::get<0>(reference->forward(query, key, value));
  CHECK(torch::allclose(mine->forward(query, key, value), unmasked, 1e-5, 1e-6));
  CHECK(!torch::allclose(unmasked, expected));
}

TEST_CASE("act position embeddings follow LeRobot's formulas") {
  const double two_pi = 2 * std::numbers::pi;
  auto table = lrhost::policy::act::sinusoidal_pos_embedding_1d(5, 6);
  REQUIRE((table.sizes() == Shape{5, 6}));
  for (int64_t p = 0; p < 5; ++p)
    for (int64_t j = 0; j < 6; ++j) {
      double angle = p / std::pow(10000.0, 2.0 * (j / 2) / 6.0);
      CHECK(table[p][j].item<double>() == doctest::Approx(j % 2 ? std::cos(angle) : std::sin(angle)).epsilon(1e-6));
    }

  const int64_t H = 4, W = 6, half = 8;
  auto embed = lrhost::policy::act::sinusoidal_pos_embedding_2d(torch::zeros({2, 3, H, W}), half);
  REQUIRE((embed.sizes() == Shape{1, 2 * half, H, W}));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w)
      for (int64_t c = 0; c < half; ++c) {
        double frequency = std::pow(10000.0, 2.0 * (c / 2) / half);
        double y = (h + 1) / (H + 1e-6) * two_pi / frequency, x = (w + 1) / (W + 1e-6) * two_pi / frequency;
        // y channels first, then x; sin on even channels, cos on odd ones.
        CHECK(embed[0][c][h][w].item<double>() == doctest::Approx(c % 2 ? std::cos(y) : std::sin(y)).epsilon(1e-5));
        CHECK(embed[0][half + c][h][w].item<double>() ==
              doctest::Approx(c % 2 ? std::cos(x) : std::sin(x)).epsilon(1e-5));
      }
}

TEST_CASE("act forward and backward: shapes, finite loss, gradients everywhere, two cameras") {
  torch::manual_seed(0);
  auto policy = make_act(tiny({{"dropout", 0.1}}), make_features(6, 0, 2, 4));
  policy->train();
  auto batch = make_batch(*policy, 3);
  auto out = policy->forward(batch);
  CHECK(out.loss.dim() == 0);
  CHECK(std::isfinite(out.loss.item<double>()));
  CHECK(out.parts.size() == 3);
  CHECK(out.parts.count("l1_loss") == 1);
  CHECK(out.parts.count("kld_loss") == 1);
  CHECK(!out.parts["l1_loss"].requires_grad());
  // Each sample's loss (a mixture's loss/<name>): with every action step real, their mean is the loss.
  const auto& per_sample = out.parts.at("loss_per_sample");
  CHECK(per_sample.sizes().vec() == std::vector<int64_t>{3});
  CHECK(!per_sample.requires_grad());
  auto unpadded = batch;
  unpadded["action_is_pad"] = torch::zeros_like(batch.at("action_is_pad"));
  auto whole = policy->forward(unpadded);
  CHECK(whole.parts.at("loss_per_sample").mean().item<double>() ==
        doctest::Approx(whole.loss.item<double>()).epsilon(1e-5));
  out.loss.backward();
  for (const auto& item : policy->named_parameters()) {
    INFO(item.key());
    REQUIRE(item.value().grad().defined());
    CHECK(torch::isfinite(item.value().grad()).all().item<bool>());
  }
  auto chunk = policy->predict_action_chunk(batch);
  CHECK((chunk.sizes() == Shape{3, 5, 4}));
}

// Loss and gradients of one training step (dropout 0, the VAE's sample drawn from a fixed seed).
std::pair<double, std::map<std::string, torch::Tensor>> loss_and_grads(ACTPolicy& policy, const Batch& batch) {
  policy.zero_grad();
  torch::manual_seed(7);
  auto loss = policy.forward(batch).loss;
  loss.backward();
  std::map<std::string, torch::Tensor> grads;
  for (const auto& item : policy.named_parameters()) grads[item.key()] = item.value().grad().clone();
  return {loss.item<double>(), grads};
}

TEST_CASE("act fast paths (folded frozen batch norm, channels-last trunk) equal the plain path up to rounding") {
  torch::manual_seed(0);
  auto policy = make_act(tiny(), make_features(6, 0, 1, 4, {3, 96, 128}));
  policy->train();
  {
    // Frozen statistics far from identity, as in an ImageNet backbone.
    torch::NoGradGuard no_grad;
    for (auto& item : policy->named_buffers()) {
      const auto& key = item.key();
      if (key.find("backbone") == std::string::npos) continue;
      auto& b = item.value();
      if (key.ends_with("running_var") || key.ends_with(".weight")) b.uniform_(0.5, 2.0);
      if (key.ends_with("running_mean") || key.ends_with(".bias")) b.normal_(0.0, 0.2);
    }
  }
  auto batch = make_batch(*policy, 2);
  auto& paths = lrhost::policy::fast_paths();
  const auto saved = paths;
  paths = {false, false};
  auto [plain_loss, plain_grads] = loss_and_grads(*policy, batch);
  // The fast paths only sum in another order. Bound: the first-order rounding bound of the longest
  // sum in the trunk's gradients, N * eps (N = batch x the stem's output positions, 2 x 48 x 64 for a
  // 96 x 128 image: the stem's weight gradient sums over every one of them), relative to the tensor's
  // largest entry. The channels-last trunk (oneDNN's blocked reductions) comes within 0.6 of it here.
  const auto image_shape = policy->act_config().image_features().front().shape;
  const double longest_sum = 2.0 * (image_shape[1] / 2) * (image_shape[2] / 2);
  const double relative = longest_sum * std::numeric_limits<float>::epsilon();
  for (auto setting : {lrhost::policy::FastPaths{true, false}, lrhost::policy::FastPaths{false, true},
                       lrhost::policy::FastPaths{true, true}}) {
    paths = setting;
    INFO("fold " << setting.fold_frozen_batch_norm << ", channels_last " << setting.channels_last);
    auto [loss, grads] = loss_and_grads(*policy, batch);
    CHECK(std::abs(loss - plain_loss) <= 1e-5 * std::abs(plain_loss));
    for (const auto& [name, want] : plain_grads) {
      INFO(name);
      const double scale = want.abs().max().item<double>() + 1e-12;
      CHECK((grads.at(name) - want).abs().max().item<double>() <= relative * scale);
    }
  }
  paths = saved;
}

TEST_CASE("act loss parts equal the masked L1 and the KL divergence computed independently") {
  torch::manual_seed(1);
  auto policy = make_act(tiny({{"kl_weight", 3.0}}), make_features(6, 0, 1, 4));
  policy->train();
  auto batch = make_batch(*policy, 2);
  torch::manual_seed(11);
  auto out = policy->forward(batch);
  torch::manual_seed(11);
  auto raw = policy->model()->forward(batch, images_of(*policy, batch));
  REQUIRE(raw.mu.defined());

  auto actions = batch["action"], pad = batch["action_is_pad"];
  double abs_sum = 0;
  int64_t valid_steps = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 5; ++t) {
      if (pad[b][t].item<bool>()) continue;
      ++valid_steps;
      for (int64_t a = 0; a < 4; ++a)
        abs_sum += std::abs(raw.actions[b][t][a].item<double>() - actions[b][t][a].item<double>());
    }
  CHECK(valid_steps == 8);
  const double l1 = abs_sum / (valid_steps * 4);
  double kld = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t l = 0; l < 8; ++l) {
      double mu = raw.mu[b][l].item<double>(), lv = raw.log_sigma_x2[b][l].item<double>();
      kld += -0.5 * (1 + lv - mu * mu - std::exp(lv));
    }
  kld /= 2;
  CHECK(out.parts["l1_loss"].item<double>() == doctest::Approx(l1).epsilon(1e-5));
  CHECK(out.parts["kld_loss"].item<double>() == doctest::Approx(kld).epsilon(1e-5));
  CHECK(out.loss.item<double>() == doctest::Approx(l1 + 3.0 * kld).epsilon(1e-5));

  // Padded steps count nowhere: not in the L1, and (key padding mask) not in the VAE encoder.
  auto altered = batch;
  altered["action"] = actions.clone();
  altered["action"].index_put_({0, torch::indexing::Slice(3, torch::indexing::None)}, 100.0);
  torch::manual_seed(11);
  CHECK(policy->forward(altered).loss.item<double>() == doctest::Approx(out.loss.item<double>()).epsilon(1e-6));
  altered["action"] = actions.clone();
  altered["action"].index_put_({0, 0}, 100.0);
  torch::manual_seed(11);
  CHECK(policy->forward(altered).loss.item<double>() != doctest::Approx(out.loss.item<double>()).epsilon(1e-3));

  // Eval mode: zero latent, no VAE, no KL part.
  policy->eval();
  auto evaluated = policy->forward(batch);
  CHECK(evaluated.parts.count("kld_loss") == 0);
  CHECK(evaluated.loss.item<double>() == doctest::Approx(evaluated.parts["l1_loss"].item<double>()));
}

TEST_CASE("act draws one randn_like(mu) in a training forward and nothing in eval (dropout 0)") {
  auto policy = make_act(tiny(), make_features(6, 0, 1, 4));
  torch::manual_seed(5);
  auto batch = make_batch(*policy, 2);
  auto next_after = [&](bool training) {
    training ? policy->train() : policy->eval();
    torch::manual_seed(21);
    policy->forward(batch);
    return torch::randn({4});
  };
  torch::manual_seed(21);
  torch::randn({2, 8});  // the latent noise (B, latent_dim)
  auto expected_after_training = torch::randn({4});
  CHECK(torch::equal(next_after(true), expected_after_training));
  torch::manual_seed(21);
  auto expected_after_eval = torch::randn({4});  // drawn first: a call's arguments have no set order
  CHECK(torch::equal(next_after(false), expected_after_eval));
}

TEST_CASE("act inference is deterministic in eval mode and returns the whole chunk") {
  torch::manual_seed(2);
  auto policy = make_act(tiny({{"dropout", 0.3}}), make_features(6, 0, 1, 4));
  auto batch = make_batch(*policy, 2);
  policy->train();
  auto first = policy->predict_action_chunk(batch);
  CHECK(!policy->is_training());
  CHECK((first.sizes() == Shape{2, 5, 4}));
  CHECK(torch::equal(first, policy->predict_action_chunk(batch)));
  // Training mode does use dropout (and the VAE), so the two modes differ.
  policy->train();
  torch::NoGradGuard no_grad;
  auto trained = policy->model()->forward(batch, images_of(*policy, batch)).actions;
  CHECK(!torch::allclose(trained, first));
}

namespace {
struct CountingACT : ACTPolicy {
  using ACTPolicy::ACTPolicy;
  int calls = 0;
  torch::Tensor predict_action_chunk(const Batch& batch) override {
    ++calls;
    return ACTPolicy::predict_action_chunk(batch);
  }
};
}  // namespace

TEST_CASE("act select_action pops n_action_steps actions per prediction; reset clears the queue") {
  torch::manual_seed(4);
  auto config = lrhost::policy::act::ACTConfig::from_json(tiny({{"n_action_steps", 3}}), make_features(6, 0, 1, 4));
  CountingACT policy(config);
  auto batch = make_batch(policy, 2);
  auto chunk = policy.ACTPolicy::predict_action_chunk(batch);
  for (int step = 0; step < 3; ++step) {
    auto action = policy.select_action(batch);
    CHECK((action.sizes() == Shape{2, 4}));
    CHECK(torch::equal(action, chunk.select(1, step)));
  }
  CHECK(policy.calls == 1);
  CHECK(torch::equal(policy.select_action(batch), chunk.select(1, 0)));
  CHECK(policy.calls == 2);
  policy.reset();
  policy.select_action(batch);
  CHECK(policy.calls == 3);
}

TEST_CASE("act temporal ensembling equals the offline exponentially weighted average") {
  const int64_t chunk = 4, steps = 7;
  const double coeff = 0.5;
  torch::manual_seed(6);
  std::vector<torch::Tensor> chunks;
  for (int64_t s = 0; s < steps; ++s) chunks.push_back(torch::randn({2, chunk, 3}));
  lrhost::policy::act::ACTTemporalEnsembler ensembler(coeff, chunk);
  for (int64_t t = 0; t < steps; ++t) {
    auto online = ensembler.update(chunks[static_cast<size_t>(t)]);
    // Every prediction made for time t, oldest first (weight exp(-coeff * i) for the i-th).
    auto sum = torch::zeros({2, 3}, torch::kFloat64);
    double weights = 0;
    int64_t i = 0;
    for (int64_t s = std::max<int64_t>(0, t - chunk + 1); s <= t; ++s, ++i) {
      double w = std::exp(-coeff * static_cast<double>(i));
      sum += w * chunks[static_cast<size_t>(s)].select(1, t - s).to(torch::kFloat64);
      weights += w;
    }
    INFO("step " << t);
    CHECK(torch::allclose(online.to(torch::kFloat64), sum / weights, 1e-5, 1e-6));
  }
  ensembler.reset();
  CHECK(torch::equal(ensembler.update(chunks[3]), chunks[3].select(1, 0)));

  // Through the policy: a prediction every step.
  auto config = lrhost::policy::act::ACTConfig::from_json(
      tiny({{"n_action_steps", 1}, {"temporal_ensemble_coeff", 0.01}}), make_features(6, 0, 1, 4));
  CountingACT policy(config);
  auto batch = make_batch(policy, 2);
  auto first_chunk = policy.ACTPolicy::predict_action_chunk(batch);
  CHECK(torch::allclose(policy.select_action(batch), first_chunk.select(1, 0)));
  // Same observation again: time 1 averages the first chunk's step 1 (older, weight 1) with the
  // new chunk's step 0 (weight exp(-0.01)).
  const double w1 = std::exp(-0.01);
  auto expected = (first_chunk.select(1, 1) + w1 * first_chunk.select(1, 0)) / (1 + w1);
  CHECK(torch::allclose(policy.select_action(batch), expected, 1e-5, 1e-6));
  CHECK(policy.calls == 2);
}

TEST_CASE("act config: LeRobot's fields in order, round trip through create_policy") {
  auto policy = make_act(tiny({{"temporal_ensemble_coeff", 0.02}, {"n_action_steps", 1}, {"tags", {"a", "b"}}}),
                         make_features(6, 0, 1, 4));
  auto config = policy->config();
  auto plain = json(config);
  std::vector<std::string> fields;
  for (const auto& [key, value] : config.items()) fields.push_back(key);
  const std::vector<std::string> lerobot_fields{"type",
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
                                                "chunk_size",
                                                "n_action_steps",
                                                "normalization_mapping",
                                                "vision_backbone",
                                                "pretrained_backbone_weights",
                                                "replace_final_stride_with_dilation",
                                                "pre_norm",
                                                "dim_model",
                                                "n_heads",
                                                "dim_feedforward",
                                                "feedforward_activation",
                                                "n_encoder_layers",
                                                "n_decoder_layers",
                                                "use_vae",
                                                "latent_dim",
                                                "n_vae_encoder_layers",
                                                "temporal_ensemble_coeff",
                                                "dropout",
                                                "kl_weight",
                                                "optimizer_lr",
                                                "optimizer_weight_decay",
                                                "optimizer_lr_backbone"};
  CHECK((fields == lerobot_fields));
  CHECK(plain["input_features"]["observation.images.cam0"] == json({{"type", "VISUAL"}, {"shape", {3, 64, 64}}}));
  CHECK(plain["output_features"]["action"] == json({{"type", "ACTION"}, {"shape", {4}}}));
  CHECK(plain["pretrained_backbone_weights"].is_null());
  CHECK(plain["device"].is_null());
  CHECK(plain["push_to_hub"] == true);
  CHECK(plain["tags"] == json({"a", "b"}));
  CHECK(plain["temporal_ensemble_coeff"].get<double>() == doctest::Approx(0.02));
  CHECK(plain["normalization_mapping"] ==
        json({{"VISUAL", "MEAN_STD"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}}));

  // Rebuilt from config.json alone: the features come from the config.
  auto rebuilt = create_policy(json(config));
  CHECK(json(rebuilt->config()) == json(config));
  auto keys = [](const lrhost::policy::Policy& p) {
    std::map<std::string, Shape> table;
    for (const auto& [key, tensor] : p.state_dict()) table[key] = tensor.sizes().vec();
    return table;
  };
  CHECK((keys(*rebuilt) == keys(*policy)));
  // Config features win over the dataset's.
  auto other = create_policy(json(config), make_features(9, 0, 1, 2));
  CHECK((keys(*other) == keys(*policy)));
}

TEST_CASE("act normalization_mapping read from a table keeps LeRobot's order, not the table's") {
  // nlohmann::json sorts keys, so the table reaches the reader as ACTION, STATE, VISUAL.
  auto mapping_of = [](const json& mapping) {
    auto config = make_act(tiny({{"normalization_mapping", mapping}}), make_features(6, 0, 1, 4))->config();
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& [type, mode] : config["normalization_mapping"].items())
      entries.emplace_back(type, mode.get<std::string>());
    return entries;
  };
  using Entries = std::vector<std::pair<std::string, std::string>>;
  // The default mapping's order (VISUAL, STATE, ACTION), with the table's modes.
  CHECK((mapping_of({{"ACTION", "MIN_MAX"}, {"VISUAL", "IDENTITY"}, {"STATE", "MEAN_STD"}}) ==
         Entries{{"VISUAL", "IDENTITY"}, {"STATE", "MEAN_STD"}, {"ACTION", "MIN_MAX"}}));
  // Types outside the default follow it, in LeRobot's FeatureType order (STATE, VISUAL, ENV, ACTION, ...).
  CHECK((mapping_of({{"REWARD", "IDENTITY"}, {"ENV", "MIN_MAX"}, {"ACTION", "MEAN_STD"}}) ==
         Entries{{"ACTION", "MEAN_STD"}, {"ENV", "MIN_MAX"}, {"REWARD", "IDENTITY"}}));
}

TEST_CASE("act config errors name the key and what was expected") {
  CHECK(contains(error_of(tiny({{"chunk_sise", 5}})), "unknown option 'chunk_sise'"));
  CHECK(contains(error_of(tiny({{"chunk_sise", 5}})), "did you mean 'chunk_size'"));
  CHECK(contains(error_of(tiny({{"dim_model", "big"}})), "'dim_model' must be an integer"));
  CHECK(contains(error_of(tiny({{"use_vae", 1}})), "'use_vae' must be true or false"));
  CHECK(contains(error_of(tiny({{"device", 3}})), "'device' must be a string or null"));
  CHECK(contains(error_of(tiny({{"private", "yes"}})), "'private' must be true, false or null"));
  CHECK(contains(error_of(tiny({{"tags", {1}}})), "'tags' must be a list of strings or null"));
  CHECK(contains(error_of(tiny({{"temporal_ensemble_coeff", "x"}})), "'temporal_ensemble_coeff' must be a number"));
  CHECK(contains(error_of(tiny({{"replace_final_stride_with_dilation", 2}})), "must be true, false, 0 or 1"));
  try {
    lrhost::policy::act::ACTConfig::from_json(tiny({{"type", "diffusion"}}), make_features(14, 0, 1));
    FAIL("a config of another type was accepted");
  } catch (const lrhost::util::ConfigError& e) {
    CHECK(contains(e.what(), "'type' must be \"act\""));
  }
  // configuration_act.py __post_init__.
  CHECK(contains(error_of(tiny({{"vision_backbone", "vit_b_16"}})), "must be one of the ResNet variants"));
  CHECK(contains(error_of(tiny({{"temporal_ensemble_coeff", 0.01}, {"n_action_steps", 2}})),
                 "'n_action_steps' must be 1 when using temporal ensembling"));
  CHECK(contains(error_of(tiny({{"n_action_steps", 6}})), "'n_action_steps' (6) must not exceed 'chunk_size' (5)"));
  CHECK(contains(error_of(tiny({{"n_obs_steps", 2}})), "'n_obs_steps' must be 1, got 2"));
  // validate_features and the features ACT reads.
  CHECK(contains(error_of(tiny(), make_features(6, 0, 0, 4)), "at least one image or the environment state"));
  PolicyFeatures no_action = make_features(6, 0, 1, 4);
  no_action.outputs.clear();
  CHECK(contains(error_of(tiny(), no_action), "needs an ACTION feature named 'action'"));
  PolicyFeatures matrix_state = make_features(6, 0, 1, 4);
  matrix_state.inputs.back().shape = {2, 3};
  CHECK(contains(error_of(tiny(), matrix_state), "'observation.state' must be a vector feature"));
  CHECK(contains(
      error_of(tiny({{"input_features", {{"observation.images.top", {{"type", "PIXELS"}, {"shape", {3, 8, 8}}}}}}})),
      "VISUAL, STATE, ENV or ACTION"));
  // Values LeRobot rejects when it builds the modules.
  CHECK(contains(error_of(tiny({{"n_heads", 5}})), "'dim_model' (32) must be divisible by 'n_heads' (5)"));
  CHECK(
      contains(error_of(tiny({{"chunk_size", 0}, {"n_action_steps", 0}})), "'chunk_size' must be a positive integer"));
  CHECK(contains(error_of(tiny({{"n_encoder_layers", -1}})), "'n_encoder_layers' must be >= 0"));
  CHECK(contains(error_of(tiny({{"dropout", 1.0}})), "'dropout' must be in [0, 1)"));
  CHECK(contains(error_of(tiny({{"feedforward_activation", "swish"}})), "must be one of 'relu', 'gelu', 'glu'"));
  CHECK(contains(error_of(tiny({{"feedforward_activation", "glu"}})), "halves linear1's output"));
  CHECK(
      contains(error_of(tiny({{"normalization_mapping", {{"PIXELS", "MEAN_STD"}}}})), "unknown feature type 'PIXELS'"));
  CHECK(contains(error_of(tiny({{"normalization_mapping", {{"STATE", "ZSCORE"}}}})),
                 "'normalization_mapping.STATE' must be one of"));
  // lrhost's limits.
  CHECK(contains(error_of<lrhost::util::NotImplemented>(tiny({{"vision_backbone", "resnet34"}})),
                 "'resnet34' is not implemented"));
  CHECK(contains(error_of<lrhost::util::NotImplemented>(tiny({{"replace_final_stride_with_dilation", true}})),
                 "'replace_final_stride_with_dilation' = true is not implemented"));
  // Without cameras there is no backbone, so its options do not matter (as in LeRobot).
  CHECK(error_of<lrhost::util::Error>(tiny({{"vision_backbone", "resnet34"}}), make_features(0, 3, 0, 2)).empty());
  // The valid defaults pass.
  CHECK(error_of<lrhost::util::Error>(tiny()).empty());
}

TEST_CASE("act loads backbone weights from a torchvision resnet18 safetensors file or torchvision's weight name") {
  lrhost::test::TempDir dir("act_backbone");
  torch::manual_seed(8);
  lrhost::policy::vision::ResNet18 source;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  {
    torch::NoGradGuard no_grad;
    for (auto& item : source->named_parameters()) tensors.emplace_back(item.key(), item.value().clone());
    for (auto& item : source->named_buffers()) tensors.emplace_back(item.key(), torch::rand_like(item.value()) + 0.5);
  }
  tensors.emplace_back("fc.weight", torch::randn({1000, 512}));  // torchvision's head, ignored
  tensors.emplace_back("fc.bias", torch::randn({1000}));
  auto good = dir / "resnet18.safetensors";
  lrhost::io::write_safetensors(good, tensors);

  auto policy = make_act(tiny({{"pretrained_backbone_weights", good.string()}}), make_features(6, 0, 1, 4));
  std::map<std::string, torch::Tensor> state;
  for (const auto& [key, tensor] : policy->state_dict()) state[key] = tensor;
  for (const auto& [key, tensor] : tensors) {
    if (key.rfind("fc.", 0) == 0) continue;
    INFO(key);
    REQUIRE(state.count("model.backbone." + key));
    CHECK(torch::equal(state["model.backbone." + key], tensor));
  }
  CHECK(policy->config()["pretrained_backbone_weights"] == good.string());

  auto wrong = tensors;
  for (auto& [key, tensor] : wrong)
    if (key == "conv1.weight") tensor = torch::zeros({64, 3, 5, 5});
  auto bad = dir / "wrong.safetensors";
  lrhost::io::write_safetensors(bad, wrong);
  auto message = error_of<lrhost::util::DataError>(tiny({{"pretrained_backbone_weights", bad.string()}}));
  CHECK(contains(message, "conv1.weight"));
  CHECK(contains(message, "wrong.safetensors"));
  CHECK(
      !error_of<lrhost::util::IoError>(tiny({{"pretrained_backbone_weights", (dir / "missing.safetensors").string()}}))
           .empty());

  // LeRobot's default, torchvision's weight name: the torch.save file in the torch hub cache.
  lrhost::test::ScopedEnv torch_home("TORCH_HOME", (dir / "torch").string());
  const auto hub_file = dir / "torch/hub/checkpoints/resnet18-f37072fd.pth";
  auto missing =
      error_of<lrhost::util::IoError>(tiny({{"pretrained_backbone_weights", "ResNet18_Weights.IMAGENET1K_V1"}}));
  CHECK(contains(missing, hub_file.string()));
  CHECK(contains(missing, "policy.pretrained_backbone_weights=null"));
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [key, tensor] : tensors) dict.insert(key, tensor);
  auto bytes = torch::pickle_save(dict);
  lrhost::test::write_text(hub_file, std::string(bytes.begin(), bytes.end()));
  auto imagenet =
      make_act(tiny({{"pretrained_backbone_weights", "ResNet18_Weights.IMAGENET1K_V1"}}), make_features(6, 0, 1, 4));
  for (const auto& [key, tensor] : imagenet->state_dict())
    if (key.rfind("model.backbone.", 0) == 0) CHECK(torch::equal(tensor, state[key]));
  CHECK(imagenet->config()["pretrained_backbone_weights"] == "ResNet18_Weights.IMAGENET1K_V1");

  // A recipe holds "" for null; a command line types null or None: a random backbone, as asked.
  for (const json& none : {json(""), json("null"), json("None"), json(nullptr)}) {
    INFO(none.dump());
    auto random = make_act(tiny({{"pretrained_backbone_weights", none}}), make_features(6, 0, 1, 4));
    CHECK(random->config()["pretrained_backbone_weights"].is_null());
    for (const auto& [key, tensor] : random->state_dict())
      if (key == "model.backbone.conv1.weight") CHECK_FALSE(torch::equal(tensor, state[key]));
  }
}
