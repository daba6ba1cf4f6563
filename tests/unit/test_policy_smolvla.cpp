// Unit tests of host/policy/smolvla: the full-size state dict against the reference's table (500
// tensors, 450,046,176 parameters, 99,880,992 trainable), freezing and dtypes, masks, positions and
// the time embedding against their formulas, the loss reduction over action_is_pad, the inference
// queue, batch errors (cameras, language), the cosine-decay schedule with LeRobot's auto-scaling, the
// config round trip and the language tokenization of the processors.
// (Numerical parity with LeRobot 0.6.1 is checked by tests/interop/run_smolvla_interop.sh.)
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>

#include "host/accel/memory_plan.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/nn/autocast.hpp"
#include "host/nn/image_preprocess.hpp"
#include "host/optim/scheduler.hpp"
#include "host/policy/activation_probe.hpp"
#include "host/policy/common/flow_matching.hpp"
#include "host/policy/common/prefix_suffix_masks.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/smolvla/flow_matching_model.hpp"
#include "host/policy/smolvla/smolvla_policy.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using lrhost::policy::create_policy;
using lrhost::policy::PolicyFeatures;
using lrhost::policy::smolvla::SmolVLAPolicy;
using nlohmann::json;
using nlohmann::ordered_json;
namespace smolvla = lrhost::policy::smolvla;
namespace fs = std::filesystem;

namespace {

// A SmolVLM config.json: SmolVLM2-500M's geometry (reference smolvla.md §1) or a tiny one.
json vlm_config(bool full_size, bool hub_dtypes = false) {
  json text = full_size ? json{{"model_type", "llama"},
                               {"hidden_size", 960},
                               {"intermediate_size", 2560},
                               {"num_hidden_layers", 32},
                               {"num_attention_heads", 15},
                               {"num_key_value_heads", 5},
                               {"head_dim", 64},
                               {"rms_norm_eps", 1e-5},
                               {"vocab_size", 49280},
                               {"rope_parameters", {{"rope_theta", 100000.0}, {"rope_type", "default"}}}}
                        : json{{"model_type", "llama"},  {"hidden_size", 64},        {"intermediate_size", 128},
                               {"num_hidden_layers", 4}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                               {"head_dim", 16},         {"rms_norm_eps", 1e-5},     {"vocab_size", 300}};
  if (hub_dtypes) text["torch_dtype"] = "bfloat16";
  json vision = full_size
                    ? json{{"hidden_size", 768}, {"image_size", 512}, {"patch_size", 16}, {"num_attention_heads", 12}}
                    : json{{"hidden_size", 32},        {"intermediate_size", 64}, {"num_hidden_layers", 2},
                           {"num_attention_heads", 2}, {"image_size", 64},        {"patch_size", 16}};
  return {
      {"model_type", "smolvlm"}, {"scale_factor", full_size ? 4 : 2}, {"text_config", text}, {"vision_config", vision}};
}

fs::path write_vlm(const lrhost::test::TempDir& dir, bool full_size, bool hub_dtypes = false) {
  auto folder = dir / (full_size ? "vlm_full" : "vlm_tiny");
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << vlm_config(full_size, hub_dtypes).dump(2);
  return folder;
}

json features_json(int64_t state = 6, int64_t action = 6) {
  return {{"input_features",
           {{"observation.state", {{"type", "STATE"}, {"shape", {state}}}},
            {"observation.images.top", {{"type", "VISUAL"}, {"shape", {3, 48, 64}}}}}},
          {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {action}}}}}}};
}

json tiny_config(const fs::path& vlm, json extra = json::object()) {
  json c = features_json();
  c["type"] = "smolvla";
  c["vlm_model_name"] = vlm.string();
  c["chunk_size"] = 5;
  c["n_action_steps"] = 3;
  c["num_vlm_layers"] = 4;
  c["resize_imgs_with_padding"] = {64, 64};
  c["num_steps"] = 3;
  for (const auto& [k, v] : extra.items()) c[k] = v;
  return c;
}

std::shared_ptr<SmolVLAPolicy> tiny_policy(const fs::path& vlm, json extra = json::object()) {
  return std::dynamic_pointer_cast<SmolVLAPolicy>(create_policy(tiny_config(vlm, std::move(extra))));
}

// A 2-D state and a 2-D action, for the processor-file cases.
PolicyFeatures state_action_features() {
  PolicyFeatures features;
  features.inputs = {{"observation.state", "STATE", {2}}};
  features.outputs = {{"action", "ACTION", {2}}};
  return features;
}

Batch tiny_batch(int64_t batch = 2, int64_t chunk = 5) {
  torch::manual_seed(3);
  Batch b;
  b["observation.images.top"] = torch::rand({batch, 3, 48, 64});
  b["observation.state"] = torch::randn({batch, 6});
  b["observation.language.tokens"] = torch::randint(0, 300, {batch, 7}, torch::kLong);
  auto mask = torch::ones({batch, 7}, torch::kBool);
  mask.index_put_({0, torch::indexing::Slice(5)}, false);
  b["observation.language.attention_mask"] = mask;
  b["action"] = torch::randn({batch, chunk, 6});
  b["action_is_pad"] = torch::zeros({batch, chunk}, torch::kBool);
  return b;
}

}  // namespace

TEST_CASE("smolvla: full-size state dict, parameter counts and freezing match LeRobot 0.6.1") {
  lrhost::test::TempDir dir("smolvla_full");
  json c = features_json();
  c["type"] = "smolvla";
  c["vlm_model_name"] = write_vlm(dir, true).string();
  auto policy = create_policy(c);
  auto state = policy->state_dict();
  CHECK(state.size() == 500);
  int64_t total = 0, trainable = 0;
  for (const auto& item : policy->named_parameters()) {
    total += item.value().numel();
    if (item.value().requires_grad()) trainable += item.value().numel();
  }
  CHECK(total == 450046176);
  CHECK(trainable == 99880992);
  std::map<std::string, torch::Tensor> by_name(state.begin(), state.end());
  const std::string V = "model.vlm_with_expert.vlm.", E = "model.vlm_with_expert.lm_expert.";
  CHECK(by_name.at(V + "model.connector.modality_projection.proj.weight").sizes() == torch::IntArrayRef({960, 12288}));
  CHECK(by_name.at(V + "lm_head.weight").sizes() == torch::IntArrayRef({49280, 960}));
  CHECK(by_name.count(V + "model.text_model.layers.15.mlp.up_proj.weight") == 1);
  CHECK(by_name.count(V + "model.text_model.layers.16.mlp.up_proj.weight") == 0);
  CHECK(by_name.count(E + "embed_tokens.weight") == 0);
  // Even expert layers self-attend (k/v read 720), odd ones cross-attend (k/v read the VLM's 320).
  CHECK(by_name.at(E + "layers.0.self_attn.k_proj.weight").sizes() == torch::IntArrayRef({320, 720}));
  CHECK(by_name.at(E + "layers.1.self_attn.k_proj.weight").sizes() == torch::IntArrayRef({320, 320}));
  CHECK(by_name.at(E + "layers.0.self_attn.q_proj.weight").sizes() == torch::IntArrayRef({960, 720}));
  CHECK(by_name.at(E + "layers.0.mlp.gate_proj.weight").sizes() == torch::IntArrayRef({2048, 720}));
  CHECK(by_name.at("model.action_time_mlp_in.weight").sizes() == torch::IntArrayRef({720, 1440}));
  CHECK(state.front().first == V + "model.vision_model.embeddings.patch_embedding.weight");
  CHECK(state.back().first == "model.action_time_mlp_out.bias");
  CHECK_FALSE(by_name.at(V + "model.vision_model.post_layernorm.weight").requires_grad());
  CHECK_FALSE(by_name.at(V + "model.text_model.layers.0.self_attn.q_proj.weight").requires_grad());
  CHECK(by_name.at(E + "layers.3.mlp.down_proj.weight").requires_grad());
  CHECK(by_name.at("model.state_proj.weight").requires_grad());
  CHECK(smolvla::expert_intermediate_size(720) == 2048);
}

TEST_CASE("smolvla: dtypes follow the VLM config (hub mix) and load_vlm_weights (bf16), heads stay fp32") {
  lrhost::test::TempDir dir("smolvla_dtypes");
  auto hub = tiny_policy(write_vlm(dir, false, /*hub_dtypes=*/true));
  std::map<std::string, torch::Tensor> p;
  for (const auto& item : hub->named_parameters()) p[item.key()] = item.value();
  const std::string V = "model.vlm_with_expert.vlm.", E = "model.vlm_with_expert.lm_expert.";
  CHECK((p.at(V + "model.vision_model.post_layernorm.weight").scalar_type() == torch::kFloat32));
  CHECK((p.at(V + "model.connector.modality_projection.proj.weight").scalar_type() == torch::kFloat32));
  CHECK((p.at(V + "lm_head.weight").scalar_type() == torch::kFloat32));
  CHECK((p.at(V + "model.text_model.layers.0.mlp.up_proj.weight").scalar_type() == torch::kBFloat16));
  CHECK((p.at(E + "layers.0.self_attn.k_proj.weight").scalar_type() == torch::kBFloat16));
  CHECK((p.at(E + "layers.1.self_attn.k_proj.weight").scalar_type() == torch::kFloat32));
  CHECK((p.at("model.action_out_proj.weight").scalar_type() == torch::kFloat32));
  // A hub-mix policy still trains: the loss is fp32 and finite, gradients reach the bf16 expert.
  auto loss = hub->forward(tiny_batch()).loss;
  CHECK((loss.scalar_type() == torch::kFloat32));
  loss.backward();
  CHECK(p.at(E + "layers.0.mlp.up_proj.weight").grad().defined());
  CHECK(std::isfinite(loss.item<double>()));

  lrhost::test::TempDir dir2("smolvla_dtypes2");
  auto pretrained = tiny_policy(write_vlm(dir2, false), {{"load_vlm_weights", true}});
  for (const auto& item : pretrained->named_parameters()) p[item.key()] = item.value();
  CHECK((p.at(V + "model.vision_model.post_layernorm.weight").scalar_type() == torch::kBFloat16));
  CHECK((p.at(E + "layers.1.self_attn.v_proj.weight").scalar_type() == torch::kFloat32));
  CHECK((p.at("model.state_proj.weight").scalar_type() == torch::kFloat32));
  // Without the VLM's model.safetensors, loading its weights says what to do.
  auto message = lrhost::test::error_of<lrhost::util::ConfigError>([&] { pretrained->load_pretrained_parts(); });
  CHECK(message.find("model.safetensors") != std::string::npos);
  CHECK(message.find("load_vlm_weights=false") != std::string::npos);
}

TEST_CASE("smolvla: a saved policy loads file-backed with the file's weights and LeRobot's dtypes") {
  // File-backed loading builds the policy with released parameters (nn/deferred_init.hpp); the
  // from-scratch initialisation must not write into them ("more than one element of the written-to
  // tensor refers to a single memory location" once stopped every SmolVLA fine-tune).
  lrhost::test::TempDir dir("smolvla_file_backed");
  torch::manual_seed(5);
  auto saved = tiny_policy(write_vlm(dir, false, /*hub_dtypes=*/true));
  lrhost::ckpt::save_pretrained(*saved, dir / "pretrained");
  torch::manual_seed(77);  // another init: equality below comes from the file
  for (auto loading : {lrhost::ckpt::WeightLoading::copy, lrhost::ckpt::WeightLoading::file_backed}) {
    auto loaded = lrhost::ckpt::load_pretrained(dir / "pretrained", true, json::object(), loading);
    auto want = saved->named_parameters(), got = loaded->named_parameters();
    REQUIRE(want.size() == got.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK_MESSAGE((got[i].key() == want[i].key()), want[i].key());
      CHECK_MESSAGE((got[i].value().scalar_type() == want[i].value().scalar_type()), want[i].key());
      CHECK_MESSAGE(torch::equal(got[i].value(), want[i].value()), want[i].key());
    }
  }
}

TEST_CASE("smolvla: attention masks, positions and the time embedding follow their formulas") {
  // Prefix of 3 (last padded) + state (ar 1) + 2 actions (ar 1 each).
  auto pad = torch::tensor({true, true, false, true, true, true}).unsqueeze(0);
  auto ar = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kLong).unsqueeze(0);
  auto mask = lrhost::policy::common::make_att_2d_masks(pad, ar)[0];
  CHECK(mask[0][1].item<bool>());        // image tokens see each other
  CHECK_FALSE(mask[0][3].item<bool>());  // ... but not the state
  CHECK_FALSE(mask[0][2].item<bool>());  // nobody sees the padded token
  CHECK(mask[3][0].item<bool>());        // state sees the prefix
  CHECK(mask[5][4].item<bool>());        // action 2 sees action 1
  CHECK_FALSE(mask[4][5].item<bool>());  // causal inside the chunk
  auto positions = pad.cumsum(1) - 1;
  CHECK(positions[0][2].item<int64_t>() == 1);  // padding repeats the previous position
  CHECK(positions[0][5].item<int64_t>() == 4);

  auto time = torch::tensor({0.25f});
  auto emb = lrhost::policy::common::sinusoidal_time_embedding(time, 8, 4e-3, 4.0);
  REQUIRE(emb.sizes() == torch::IntArrayRef({1, 8}));
  CHECK((emb.scalar_type() == torch::kFloat64));
  for (int i = 0; i < 4; ++i) {
    double period = 4e-3 * std::pow(4.0 / 4e-3, i / 3.0);
    double arg = 0.25 * 2 * std::numbers::pi / period;
    CHECK(emb[0][i].item<double>() == doctest::Approx(std::sin(arg)).epsilon(1e-12));
    CHECK(emb[0][i + 4].item<double>() == doctest::Approx(std::cos(arg)).epsilon(1e-12));
  }
}

TEST_CASE("smolvla: the loss is the MSE over valid steps and real action dims; frozen parts get no gradient") {
  lrhost::test::TempDir dir("smolvla_loss");
  auto policy = tiny_policy(write_vlm(dir, false));
  policy->train();
  auto batch = tiny_batch();
  batch["noise"] = torch::randn({2, 5, 32});
  batch["time"] = torch::tensor({0.3f, 0.8f});
  auto losses_of = [&](const Batch& b) {
    // The per-element losses through the model, as the policy reduces them.
    auto& model = policy->model();
    smolvla::PrefixInputs in;
    in.images = {lrhost::nn::resize_with_pad_signed(b.at("observation.images.top"), 64, 64)};
    in.image_masks = {torch::ones({2}, torch::kBool)};
    in.language_tokens = b.at("observation.language.tokens");
    in.language_masks = b.at("observation.language.attention_mask");
    in.state = torch::constant_pad_nd(b.at("observation.state"), {0, 26});
    return model->forward(in, torch::constant_pad_nd(b.at("action"), {0, 26}), b.at("noise"), b.at("time"));
  };
  auto elementwise = losses_of(batch).slice(-1, 0, 6).detach();
  auto loss = policy->forward(batch).loss;
  CHECK(loss.item<double>() == doctest::Approx(elementwise.mean().item<double>()).epsilon(1e-6));
  // Pad the last 2 steps of sample 0: they leave the sum and the count.
  batch["action_is_pad"].index_put_({0, torch::indexing::Slice(3)}, true);
  auto valid = batch["action_is_pad"].logical_not().unsqueeze(-1);
  auto expected = (elementwise * valid).sum() / (valid.sum() * 6);
  auto padded_loss = policy->forward(batch).loss;
  CHECK(padded_loss.item<double>() == doctest::Approx(expected.item<double>()).epsilon(1e-6));
  padded_loss.backward();
  for (const auto& item : policy->named_parameters()) {
    bool vlm = item.key().find(".vlm.") != std::string::npos;
    INFO(item.key());
    CHECK(item.value().grad().defined() == !vlm);
  }
  // The same noise and time give the same loss; without them LeRobot's samplers draw new ones.
  CHECK(policy->forward(batch).loss.item<double>() == padded_loss.item<double>());
}

TEST_CASE("smolvla: inference chunks, the action queue and the cache-free equivalence of the last step") {
  lrhost::test::TempDir dir("smolvla_infer");
  auto policy = tiny_policy(write_vlm(dir, false));
  auto batch = tiny_batch();
  batch.erase("action");
  batch.erase("action_is_pad");
  batch["noise"] = torch::randn({2, 5, 32});
  auto chunk = policy->predict_action_chunk(batch);
  REQUIRE(chunk.sizes() == torch::IntArrayRef({2, 5, 6}));
  CHECK_FALSE(policy->is_training());
  CHECK(torch::equal(chunk, policy->predict_action_chunk(batch)));
  // select_action pops n_action_steps = 3 actions of one chunk, then predicts again.
  policy->reset();
  for (int t = 0; t < 3; ++t) CHECK(torch::equal(policy->select_action(batch), chunk.select(1, t)));
  auto fresh = policy->select_action(batch);
  CHECK(torch::equal(fresh, chunk.select(1, 0)));
}

TEST_CASE("smolvla: batches with unknown or missing cameras or without language are refused with a hint") {
  lrhost::test::TempDir dir("smolvla_errors");
  auto vlm = write_vlm(dir, false);
  auto policy = tiny_policy(vlm);
  auto batch = tiny_batch();
  batch["observation.images.side"] = torch::rand({2, 3, 48, 64});
  auto unknown = lrhost::test::error_of<lrhost::util::ConfigError>([&] { policy->forward(batch); });
  CHECK(unknown.find("observation.images.side") != std::string::npos);
  // The suggestion as the command line takes it (JSON), dataset camera -> policy camera.
  CHECK(unknown.find("e.g. rename_map='{\"observation.images.side\": \"observation.images.") != std::string::npos);
  CHECK(unknown.find("[\"") == std::string::npos);

  batch = tiny_batch();
  batch.erase("observation.language.tokens");
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] { policy->forward(batch); }).find("preprocess") !=
        std::string::npos);

  // A second policy camera missing from the batch: an error, unless it is an empty camera.
  json two = tiny_config(vlm);
  two["input_features"]["observation.images.wrist"] = {{"type", "VISUAL"}, {"shape", {3, 48, 64}}};
  auto with_wrist = create_policy(two);
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          with_wrist->forward(tiny_batch());
        }).find("observation.images.wrist' is missing") != std::string::npos);
  auto empty = tiny_policy(vlm, {{"empty_cameras", 1}});
  auto features = empty->features().inputs;
  CHECK(features.back().key == "observation.images.empty_camera_0");
  CHECK((features.back().shape == std::vector<int64_t>{3, 480, 640}));
  CHECK(std::isfinite(empty->forward(tiny_batch()).loss.item<double>()));
}

TEST_CASE("smolvla: config defaults, round trip and LeRobot's validation") {
  lrhost::test::TempDir dir("smolvla_config");
  auto vlm = write_vlm(dir, false);
  auto policy = tiny_policy(vlm);
  auto saved = policy->config();
  CHECK(saved["type"] == "smolvla");
  CHECK(saved["pad_language_to"] == "longest");
  CHECK(saved["normalization_mapping"]["VISUAL"] == "IDENTITY");
  CHECK(saved["rtc_config"].is_null());
  auto again = create_policy(json::parse(saved.dump()));
  CHECK((again->config() == saved));
  auto preset = policy->scheduler_preset();
  CHECK(preset["type"] == "cosine_decay_with_warmup");
  CHECK(preset["decay_lr_ratio"].get<double>() == doctest::Approx(0.025));
  CHECK((policy->optimizer_preset()["betas"] == ordered_json::array({0.9, 0.95})));
  CHECK(policy->delta_indices().at("action").size() == 5);

  using lrhost::util::ConfigError;
  CHECK(lrhost::test::error_of<ConfigError>([&] {
          tiny_policy(vlm, {{"n_action_steps", 9}});
        }).find("chunk_size") != std::string::npos);
  CHECK(lrhost::test::error_of<lrhost::util::NotImplemented>([&] {
          tiny_policy(vlm, {{"rtc_config", {{"enabled", true}}}});
        }).find("real-time chunking") != std::string::npos);
  json wide = tiny_config(vlm);
  wide["output_features"]["action"]["shape"] = {40};
  CHECK(lrhost::test::error_of<ConfigError>([&] { create_policy(wide); }).find("max_action_dim") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([&] {
          tiny_policy(vlm, {{"num_expert_layers", 3}});
        }).find("num_expert_layers") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([&] { tiny_policy(dir / "absent_vlm"); }).find("policy.vlm_model_name") !=
        std::string::npos);
}

TEST_CASE("smolvla: fewer expert layers than VLM layers pair every other VLM layer") {
  lrhost::test::TempDir dir("smolvla_half");
  auto vlm = write_vlm(dir, false);
  // Self-attention only: VLM layers 0 and 2 run with expert layers 0 and 1, 1 and 3 without one.
  auto policy = tiny_policy(vlm, {{"num_expert_layers", 2}, {"attention_mode", "self_attn"}});
  CHECK(policy->model()->vlm_with_expert->lm_expert->layers->size() == 2);
  auto batch = tiny_batch();
  CHECK(std::isfinite(policy->forward(batch).loss.item<double>()));
  batch.erase("action");
  batch.erase("action_is_pad");
  CHECK(policy->predict_action_chunk(batch).sizes() == torch::IntArrayRef({2, 5, 6}));
  // With cross-attention every other layer, self-attention VLM layer 2 would meet cross-attention
  // expert layer 1: LeRobot builds it and fails in forward; lrhost refuses it up front.
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          tiny_policy(vlm, {{"num_expert_layers", 2}});
        }).find("cannot run") != std::string::npos);
}

TEST_CASE("scheduler: cosine_decay_with_warmup is LeRobot's, shrunk for runs shorter than decay_steps") {
  auto spec = lrhost::optim::ScheduleSpec::from_json({{"type", "cosine_decay_with_warmup"},
                                                      {"warmup_steps", 1000},
                                                      {"decay_steps", 30000},
                                                      {"decay_lr_ratio", 0.025},
                                                      {"total_steps", 3000}});
  auto [warmup, decay] = spec.effective_warmup_and_decay();
  CHECK(warmup == 100);
  CHECK(decay == 3000);
  CHECK(spec.factor(0) == doctest::Approx(1.0 / 101));
  CHECK(spec.factor(50) == doctest::Approx((1.0 / 101 - 1) * 0.5 + 1));
  CHECK(spec.factor(100) == doctest::Approx(0.975 * 0.5 * (1 + std::cos(std::numbers::pi * 100 / 3000)) + 0.025));
  CHECK(spec.factor(3000) == doctest::Approx(0.025));
  CHECK(spec.factor(5000) == doctest::Approx(0.025));
  auto full = lrhost::optim::ScheduleSpec::from_json({{"type", "cosine_decay_with_warmup"},
                                                      {"warmup_steps", 1000},
                                                      {"decay_steps", 30000},
                                                      {"decay_lr_ratio", 0.025},
                                                      {"total_steps", 100000}});
  CHECK((full.effective_warmup_and_decay() == std::pair<int64_t, int64_t>{1000, 30000}));
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([] {
          lrhost::optim::ScheduleSpec::from_json({{"type", "cosine_decay_with_warmup"}, {"total_steps", 10}});
        }).find("decay_steps") != std::string::npos);
}

TEST_CASE("language: task strings tokenized per batch and through the task table agree; truncation") {
  const auto vlm = lrhost::test::fixture_path("../../recipes/assets", "smolvla_tiny_vlm");
  REQUIRE_FALSE(vlm.empty());
  lrhost::policy::LanguageSettings settings{"tiny", vlm, 8, "longest"};
  lrhost::policy::TaskTokenizer tokenizer(settings);
  const std::vector<std::string> tasks{"push the T block to the goal", "push 12 blocks\n",
                                       "a much longer instruction that certainly runs past eight tokens"};
  auto direct = tokenizer.tokenize(tasks);
  CHECK(direct.tokens.size(1) == 8);  // the long task is truncated to max_length
  CHECK((direct.tokens.scalar_type() == torch::kLong));
  CHECK((direct.attention_mask.scalar_type() == torch::kBool));
  tokenizer.set_task_table(tasks);
  auto rows = tokenizer.tokenize_indices(torch::tensor({1, 0}, torch::kLong));
  auto pair = tokenizer.tokenize({tasks[1], tasks[0]});
  CHECK(torch::equal(rows.tokens, pair.tokens));  // "longest" cuts the table rows to the batch's longest
  CHECK(torch::equal(rows.attention_mask, pair.attention_mask));
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          tokenizer.tokenize_indices(torch::tensor({3}));
        }).find("out of range") != std::string::npos);
  lrhost::policy::TaskTokenizer fresh(settings);
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          fresh.tokenize_indices(torch::tensor({0}));
        }).find("set_tasks") != std::string::npos);
  settings.padding = "max_length";
  lrhost::policy::TaskTokenizer padded(settings);
  CHECK(padded.tokenize({"push"}).tokens.size(1) == 8);
}

TEST_CASE("processors: SmolVLA's pipeline files (language steps, normalizer at step 5) round trip") {
  const auto vlm = lrhost::test::fixture_path("../../recipes/assets", "smolvla_tiny_vlm");
  REQUIRE_FALSE(vlm.empty());
  lrhost::test::TempDir dir("smolvla_processors");
  const auto features = state_action_features();
  lrhost::data::DatasetStats stats;
  for (const char* key : {"observation.state", "action"}) {
    stats[key].set("mean", torch::tensor({1.0f, 2.0f}));
    stats[key].set("std", torch::tensor({2.0f, 4.0f}));
  }
  auto processors = lrhost::policy::PolicyProcessors::build(
      features, {{"VISUAL", "IDENTITY"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}}, stats, "cpu",
      lrhost::policy::LanguageSettings{vlm.string(), vlm, 8, "max_length"},
      lrhost::policy::policy_spec("smolvla").processors);
  processors.set_rename_map({{"observation.pos", "observation.state"}});
  processors.save(dir.path);
  auto pre = lrhost::io::read_json_file(dir / "policy_preprocessor.json", {});
  std::vector<std::string> names;
  for (const auto& step : pre["steps"]) names.push_back(step["registry_name"].get<std::string>());
  CHECK((names == std::vector<std::string>{"rename_observations_processor", "to_batch_processor",
                                           "smolvla_new_line_processor", "tokenizer_processor", "device_processor",
                                           "normalizer_processor"}));
  CHECK(pre["steps"][3]["config"]["tokenizer_name"] == vlm.string());
  CHECK(pre["steps"][5]["state_file"] == "policy_preprocessor_step_5_normalizer_processor.safetensors");
  auto loaded = lrhost::policy::PolicyProcessors::load(dir.path);
  CHECK((loaded == processors));
  Batch batch{{"observation.pos", torch::tensor({{3.0f, 6.0f}})}};
  auto out = loaded.normalize(batch, {"push the block"});
  // The new-line step: a task without "\n" gets one, a task with one is left alone.
  CHECK(torch::equal(loaded.normalize(batch, {"push the block\n"}).at("observation.language.tokens"),
                     out.at("observation.language.tokens")));
  CHECK_FALSE(torch::equal(loaded.normalize(batch, {"push the block\n\n"}).at("observation.language.tokens"),
                           out.at("observation.language.tokens")));
  CHECK(torch::allclose(out.at("observation.state"), torch::tensor({{1.0f, 1.0f}})));
  CHECK(out.at("observation.language.tokens").size(1) == 8);
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] { loaded.normalize(batch); }).find("task_index") !=
        std::string::npos);
  // A batch without the renamed key: an error naming it and the batch's keys, not a silent no-op.
  Batch other{{"observation.position", torch::tensor({{3.0f, 6.0f}})}};
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] { loaded.normalize(other, {"push"}); })
            .find("rename_map: key 'observation.pos' (-> 'observation.state') matches no key of the batch, whose keys "
                  "are 'observation.position'") != std::string::npos);
}

TEST_CASE(
    "vision feature cache: computes once, shares across openings, rebuilds for other weights, refuses bad input") {
  lrhost::test::TempDir dir("vision_cache");
  smolvla::VisionCacheLayout layout;
  layout.num_frames = 10;
  layout.tokens = 4;
  layout.hidden = 3;
  layout.cameras = {"observation.images.top"};
  layout.fingerprint = "weights-a";
  int computed = 0;
  auto compute = [&](const torch::Tensor& rows) {
    computed += static_cast<int>(rows.numel());
    return torch::arange(rows.numel() * 12, torch::kFloat).reshape({rows.numel(), 4, 3}) + 100 * computed;
  };
  const std::string top = "observation.images.top";
  torch::Tensor first;
  {
    smolvla::VisionFeatureCache cache(dir.path, layout, 1 << 20);
    first = cache.lookup(top, torch::tensor({3, 7}), torch::kCPU, torch::kFloat, compute);
    CHECK(computed == 2);
    // Frame 7 is cached now; frame 1 is new.
    auto second = cache.lookup(top, torch::tensor({7, 1}), torch::kCPU, torch::kFloat, compute);
    CHECK(computed == 3);
    CHECK(torch::equal(second[0], first[1]));
    CHECK(cache.hits() == 1);
    CHECK(cache.misses() == 3);
    // Another precision keeps its own records.
    cache.lookup(top, torch::tensor({3}), torch::kCPU, torch::kBFloat16,
                 [&](const torch::Tensor& rows) { return compute(rows).to(torch::kBFloat16); });
    CHECK(computed == 4);
    using lrhost::util::DataError;
    CHECK(lrhost::test::error_of<DataError>([&] {
            cache.lookup(top, torch::tensor({10}), torch::kCPU, torch::kFloat, compute);
          }).find("outside 0..9") != std::string::npos);
    CHECK(lrhost::test::error_of<DataError>([&] {
            cache.lookup(top, torch::tensor({5}), torch::kCPU, torch::kFloat, [](const torch::Tensor&) {
              return torch::zeros({1, 4, 2});
            });
          }).find("do not match") != std::string::npos);
    CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
            cache.lookup("observation.images.side", torch::tensor({0}), torch::kCPU, torch::kFloat, compute);
          }).find("not one of the cached cameras") != std::string::npos);
  }
  {
    // A second opening (another rank, a resumed run) reads what the first wrote.
    smolvla::VisionFeatureCache again(dir.path, layout, 1 << 20);
    auto read = again.lookup(top, torch::tensor({3, 7}), torch::kCPU, torch::kFloat, compute);
    CHECK(computed == 4);
    CHECK(torch::equal(read, first));
  }
  {
    // Other weights: the cache is discarded and computed again.
    layout.fingerprint = "weights-b";
    smolvla::VisionFeatureCache other(dir.path, layout, 1 << 20);
    other.lookup(top, torch::tensor({3}), torch::kCPU, torch::kFloat, compute);
    CHECK(computed == 5);
  }
  // 10 frames x 48 bytes exceed a 100-byte bound: refused, naming the size it would need.
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          smolvla::VisionFeatureCache small(dir.path, layout, 100);
        }).find("exceeds its bound") != std::string::npos);
}

TEST_CASE("processors: a tokenizer step lrhost does not run the same way is refused, naming the key") {
  const auto vlm = lrhost::test::fixture_path("../../recipes/assets", "smolvla_tiny_vlm");
  REQUIRE_FALSE(vlm.empty());
  lrhost::test::TempDir dir("smolvla_bad_processors");
  const auto features = state_action_features();
  auto processors =
      lrhost::policy::PolicyProcessors::build(features, {{"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}}, {}, "cpu",
                                              lrhost::policy::LanguageSettings{vlm.string(), vlm, 8, "longest"},
                                              lrhost::policy::policy_spec("smolvla").processors);
  processors.save(dir.path);
  auto pre = lrhost::io::read_json_file(dir / "policy_preprocessor.json", {});
  auto with = [&](const std::string& key, const nlohmann::ordered_json& value) {
    auto changed = pre;
    changed["steps"][3]["config"][key] = value;
    lrhost::io::write_file_atomic(dir / "policy_preprocessor.json", changed.dump(2));
    return lrhost::test::error_of<lrhost::util::DataError>([&] { lrhost::policy::PolicyProcessors::load(dir.path); });
  };
  CHECK(with("padding_side", "left").find("'padding_side' must be \"right\"") != std::string::npos);
  CHECK(with("padding", "do_not_pad").find("'padding'") != std::string::npos);
  CHECK(with("max_length", 0).find("'max_length' must be a positive integer") != std::string::npos);
  CHECK(with("add_special_tokens", true).find("unknown config key 'add_special_tokens'") != std::string::npos);
  auto missing = pre;
  missing["steps"][3]["config"].erase("tokenizer_name");
  lrhost::io::write_file_atomic(dir / "policy_preprocessor.json", missing.dump(2));
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          lrhost::policy::PolicyProcessors::load(dir.path);
        }).find("no 'tokenizer_name'") != std::string::npos);
}

TEST_CASE("smolvla: the activation probe's example batch carries language tokens, and each sample costs memory") {
  lrhost::test::TempDir dir("smolvla_probe");
  auto policy = tiny_policy(write_vlm(dir, false));
  auto batch = lrhost::policy::example_batch(*policy, 2);
  const auto max_length = policy->smolvla_config().tokenizer_max_length;
  CHECK(batch.at("observation.language.tokens").sizes() == torch::IntArrayRef{2, max_length});
  CHECK((batch.at("observation.language.attention_mask").scalar_type() == torch::kBool));
  CHECK(batch.at("action").size(1) == policy->smolvla_config().chunk_size);
  auto cost = lrhost::policy::measure_activations(*policy);
  // Every text layer keeps at least its prefix + suffix hidden states per sample.
  const int64_t tokens = max_length + policy->smolvla_config().chunk_size;
  CHECK(cost.per_sample > 4 * tokens * 64 * 4);
}

TEST_CASE("smolvla: the vision cache is refused on an FSDP-sharded policy (its fingerprint needs whole weights)") {
  lrhost::test::TempDir dir("smolvla_sharded_cache");
  auto policy = tiny_policy(write_vlm(dir, false));
  struct Sharded final : lrhost::policy::ShardedStateSource {
    std::vector<std::pair<std::string, torch::Tensor>> full_state_dict() override { return {}; }
    int64_t num_parameters() const override { return 0; }
  } sharded;
  policy->set_sharded_state_source(&sharded);
  auto message = lrhost::test::error_of<lrhost::util::ConfigError>(
      [&] { policy->enable_vision_cache(dir.path / "cache", 10, "test", false); });
  policy->set_sharded_state_source(nullptr);
  CHECK(message.find("before acc:prepare") != std::string::npos);
  // The same policy, unsharded, takes the cache.
  policy->enable_vision_cache(dir.path / "cache", 10, "test", false);
  CHECK(policy->vision_cache() != nullptr);
}

TEST_CASE("smolvla: the vision cache is refused when LoRA adapters train the vision tower") {
  lrhost::test::TempDir dir("smolvla_lora_cache");
  torch::manual_seed(5);
  lrhost::ckpt::save_pretrained(*tiny_policy(write_vlm(dir, false)), dir / "pretrained");
  const json tower{{"peft", {{"method_type", "LORA"}, {"target_module_names", {"q_proj"}}}}};
  auto adapted =
      std::dynamic_pointer_cast<SmolVLAPolicy>(lrhost::ckpt::load_pretrained(dir / "pretrained", true, tower));
  REQUIRE(adapted);
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          adapted->enable_vision_cache(dir.path / "cache", 10, "test", false);
        }).find("trainable parameters in the vision tower") != std::string::npos);
  // LeRobot's default targets leave the tower frozen: the cache is taken.
  auto expert = std::dynamic_pointer_cast<SmolVLAPolicy>(
      lrhost::ckpt::load_pretrained(dir / "pretrained", true, json{{"peft", {{"method_type", "LORA"}}}}));
  REQUIRE(expert);
  expert->enable_vision_cache(dir.path / "cache", 10, "test", false);
  CHECK(expert->vision_cache() != nullptr);
}

TEST_CASE("smolvla: the vision cache through Policy's training capabilities (prepare_training, training_metrics)") {
  lrhost::test::TempDir dir("smolvla_capabilities");
  const auto vlm = write_vlm(dir, false);
  lrhost::policy::TrainingContext context;
  context.cache_dir = dir.path / "cache";
  context.num_frames = 10;
  context.dataset_id = "test";
  // Without cache_vision_features the capability keeps nothing.
  auto plain = tiny_policy(vlm);
  lrhost::policy::Policy& plain_base = *plain;
  plain_base.prepare_training(context);
  CHECK(plain->vision_cache() == nullptr);
  CHECK(plain_base.training_metrics().empty());
  CHECK(!fs::exists(dir.path / "cache"));
  // With it, the loop's call opens the cache under <cache_dir>/vision_features and its counters
  // become the policy's metrics; the loop never names the policy type.
  auto cached = tiny_policy(vlm, {{"cache_vision_features", true}});
  lrhost::policy::Policy& base = *cached;
  CHECK(base.training_metrics().empty());
  base.prepare_training(context);
  REQUIRE(cached->vision_cache() != nullptr);
  CHECK(fs::exists(dir.path / "cache" / "vision_features"));
  const auto metrics = base.training_metrics();
  CHECK(metrics == std::map<std::string, double>{{"vision_cache_hit_count", 0.0}, {"vision_cache_miss_count", 0.0}});
  // The run's facts are required and the cache's own refusals still apply.
  auto missing = context;
  missing.num_frames = 0;
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          base.prepare_training(missing);
        }).find("frame count") != std::string::npos);
  auto augmented = context;
  augmented.augmentation = true;
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          base.prepare_training(augmented);
        }).find("augmented frames differ every epoch") != std::string::npos);
}

namespace {

// The tiny policy twice, everything trainable (so SigLIP's layers are checkpointed too), with and
// without gradient_checkpointing, the second holding the first's weights.
int64_t policy_max_length(const SmolVLAPolicy& policy) {
  return policy.smolvla_config().tokenizer_max_length;
}

std::pair<std::shared_ptr<SmolVLAPolicy>, std::shared_ptr<SmolVLAPolicy>> checkpointing_pair(const fs::path& vlm,
                                                                                             json extra) {
  auto plain = tiny_policy(vlm, extra);
  extra["gradient_checkpointing"] = true;
  auto checkpointed = tiny_policy(vlm, extra);
  torch::NoGradGuard no_grad;
  auto source = plain->named_parameters();
  for (auto& item : checkpointed->named_parameters()) item.value().copy_(source[item.key()]);
  return {plain, checkpointed};
}

}  // namespace

TEST_CASE("smolvla: gradient_checkpointing gives the same loss and bit-identical gradients") {
  lrhost::test::TempDir dir("smolvla_checkpointing");
  const auto vlm = write_vlm(dir, false);
  for (const bool autocast_on : {false, true})
    for (const json& extra : {json{{"freeze_vision_encoder", false}, {"train_expert_only", false}}, json::object(),
                              json{{"attention_mode", "self_attn"}, {"num_expert_layers", 2}}}) {
      INFO(extra.dump() << (autocast_on ? " under bf16 autocast" : ""));
      auto [plain, checkpointed] = checkpointing_pair(vlm, extra);
      CHECK(!checkpointed->config().contains("gradient_checkpointing"));  // lrhost's own: not in config.json
      CHECK(checkpointed->smolvla_config().gradient_checkpointing);
      auto batch = tiny_batch();
      batch["noise"] = torch::randn({2, 5, 32});
      batch["time"] = torch::tensor({0.3f, 0.8f});
      std::vector<torch::Tensor> losses;
      for (auto& policy : {plain, checkpointed}) {
        policy->train();
        // bf16 autocast too: bit-identical here because each weight is used once per forward (one
        // camera); see activation_checkpoint.hpp for weights shared between segments.
        lrhost::nn::AutocastGuard autocast(
            autocast_on ? std::optional<lrhost::nn::AutocastSpec>(lrhost::nn::AutocastSpec{}) : std::nullopt);
        auto loss = policy->forward(batch).loss;
        loss.backward();
        losses.push_back(loss.detach());
      }
      CHECK(torch::equal(losses[0], losses[1]));
      auto reference = plain->named_parameters();
      int64_t with_grad = 0;
      for (const auto& item : checkpointed->named_parameters()) {
        INFO(item.key());
        const auto& expected = reference[item.key()].grad();
        REQUIRE(item.value().grad().defined() == expected.defined());
        if (!expected.defined()) continue;
        ++with_grad;
        CHECK(torch::equal(item.value().grad(), expected));
      }
      CHECK(with_grad > 0);
    }
}

TEST_CASE("smolvla: gradient_checkpointing keeps fewer activation bytes per sample") {
  lrhost::test::TempDir dir("smolvla_checkpointing_probe");
  auto [plain, checkpointed] =
      checkpointing_pair(write_vlm(dir, false), {{"freeze_vision_encoder", false}, {"train_expert_only", false}});
  const auto off = lrhost::policy::measure_activations(*plain);
  const auto on = lrhost::policy::measure_activations(*checkpointed);
  MESSAGE("activation bytes per sample: off " << off.per_sample << ", on " << on.per_sample);
  // What checkpointing keeps of a layer is its input: per VLM layer index the prefix (P tokens x 64)
  // and the suffix (S x 48), per SigLIP layer the patch tokens (16 x 32), fp32. Without it each layer
  // keeps, besides that input, at least 10 more of its widths per token, all distinct storages:
  //  - text layer (width W = 64, MLP 128 = 2W): the normed input (W, read by q/k/v), q (W), k and v
  //    (2 x 32 = W), the attention output (W, read by o_proj), the residual sum (W, read by the
  //    post-attention norm), its normed value (W), gate, up and SiLU(gate) (3 x 2W): 12 W;
  //  - expert layer (48 wide, q 64, MLP 256): more than 10 x 48 in its MLP alone (3 x 256);
  //  - SigLIP layer (W = 32, MLP 64): normed input, q, k, v, attention output, residual, normed
  //    residual (7 W), fc1 out and GELU out (4 W): 11 W.
  // (Attention probabilities come on top.) So the drop is at least 10x the layer inputs kept, K; with
  // P >= 48 language tokens + 1 state token (the image tokens left out) K is at least:
  const int64_t language = policy_max_length(*plain) + 1, chunk = plain->smolvla_config().chunk_size;
  const int64_t kept = 4 * (language * 64 + chunk * 48) * 4 + 2 * 16 * 32 * 4;
  CHECK(off.per_sample - on.per_sample >= 10 * kept);
  CHECK(on.per_sample < off.per_sample);

  // Through the backward (what `lrhost show` plans with checkpointing): the peak holds the inputs
  // kept plus one layer's recomputation, whose text layer alone keeps at least 10 of its widths per
  // prefix token (above), yet stays below the peak without checkpointing.
  using lrhost::policy::ActivationMeasure;
  const auto on_peak = lrhost::policy::measure_activations(*checkpointed, {}, ActivationMeasure::backward_peak);
  const auto off_peak = lrhost::policy::measure_activations(*plain, {}, ActivationMeasure::backward_peak);
  MESSAGE("peak through backward per sample: off " << off_peak.per_sample << ", on " << on_peak.per_sample);
  CHECK(on_peak.per_sample - on.per_sample >= 10 * language * 64 * 4);
  CHECK(on_peak.per_sample < off_peak.per_sample);
  // The probe leaves no gradients behind.
  for (const auto& p : checkpointed->parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("smolvla: the FSDP plan gathers each expert layer with the VLM layer it runs beside") {
  lrhost::test::TempDir dir("smolvla_gather_groups");
  const auto vlm = write_vlm(dir, false);
  // Expert layer j runs inside VLM layer j · stride's hooks (the layer loop's pairing).
  auto half = tiny_policy(vlm, {{"num_expert_layers", 2}, {"attention_mode", "self_attn"}});
  CHECK(half->fsdp_gather_group("model.vlm_with_expert.lm_expert.layers.1") ==
        "model.vlm_with_expert.vlm.model.text_model.layers.2");
  CHECK(half->fsdp_gather_group("model.vlm_with_expert.vlm.model.text_model.layers.3") ==
        "model.vlm_with_expert.vlm.model.text_model.layers.3");
  // ZeRO-3's gathered peak: the root unit and two of the largest such pairs, more than two of the
  // largest single layers.
  auto policy = tiny_policy(vlm);
  const json config{
      {"batch_size", 2}, {"steps", 10}, {"parallelism", {{"dp_shard", 2}}}, {"optimizer", {{"lr", 1e-4}}}};
  const auto plan = lrhost::accel::make_memory_plan(*policy, config, 2);
  int64_t root = 0, largest_pair = 0, largest_unit = 0;
  std::map<std::string, int64_t> pairs;
  for (const auto& unit : plan.units) {
    int64_t bytes = 0;
    for (const auto& p : unit.params) bytes += p.numel() * static_cast<int64_t>(c10::elementSize(p.dtype));
    if (unit.module_type == "root") {
      root += bytes;
      continue;
    }
    largest_unit = std::max(largest_unit, bytes);
    const auto at = unit.name.find(".lm_expert.layers.");
    pairs[at == std::string::npos ? unit.name
                                  : "model.vlm_with_expert.vlm.model.text_model.layers." +
                                        unit.name.substr(at + std::string(".lm_expert.layers.").size())] += bytes;
  }
  for (const auto& [name, bytes] : pairs) largest_pair = std::max(largest_pair, bytes);
  CHECK(pairs.size() == 4 + 1);  // four layer pairs and the vision tower
  const auto zero3 =
      std::find_if(plan.strategies.begin(), plan.strategies.end(), [](const auto& s) { return s.name == "zero-3"; });
  REQUIRE(zero3 != plan.strategies.end());
  CHECK(zero3->peak_gathered_bytes == root + 2 * largest_pair);
  CHECK(largest_pair > largest_unit);
}

TEST_CASE("smolvla lora: LeRobot's default targets, only adapters train, a fresh adapter keeps the loss") {
  lrhost::test::TempDir dir("smolvla_lora");
  torch::manual_seed(5);
  auto base = tiny_policy(write_vlm(dir, false));
  lrhost::ckpt::save_pretrained(*base, dir / "pretrained");
  auto batch = tiny_batch();
  batch["noise"] = torch::randn({2, 5, 32});
  batch["time"] = torch::tensor({0.3f, 0.8f});
  base->train();
  const double base_loss = base->forward(batch).loss.item<double>();

  const json peft{{"peft", {{"method_type", "LORA"}}}};
  for (auto loading : {lrhost::ckpt::WeightLoading::copy, lrhost::ckpt::WeightLoading::file_backed}) {
    auto adapted = lrhost::ckpt::load_pretrained(dir / "pretrained", true, peft, loading);
    REQUIRE(adapted->lora_adapters());
    const auto& selection = adapted->lora_adapters()->selection;
    std::vector<std::string> expected;
    for (int layer = 0; layer < 4; ++layer)
      for (const char* proj : {"q_proj", "v_proj"})
        expected.push_back("model.vlm_with_expert.lm_expert.layers." + std::to_string(layer) + ".self_attn." + proj);
    for (const char* proj :
         {"state_proj", "action_in_proj", "action_out_proj", "action_time_mlp_in", "action_time_mlp_out"})
      expected.push_back(std::string("model.") + proj);
    auto sorted = selection.adapted;
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected.begin(), expected.end());
    CHECK(sorted == expected);
    for (const auto& p : adapted->named_parameters()) {
      INFO(p.key());
      CHECK(p.value().requires_grad() == (p.key().find(".lora_") != std::string::npos));
    }
    adapted->train();
    CHECK(adapted->forward(batch).loss.item<double>() == base_loss);  // B = 0: the base's forward
  }
  // A new policy takes no adapters (LeRobot's wrap_with_peft refuses it too).
  CHECK(lrhost::test::contains(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
                                 auto config = tiny_config(write_vlm(dir, false));
                                 config["peft"] = {{"method_type", "LORA"}};
                                 create_policy(config);
                               }),
                               "fine-tune a pretrained policy"));
}

TEST_CASE("smolvla lora: every adapter the training forward uses gets a gradient (all-linear, random B)") {
  lrhost::test::TempDir dir("smolvla_lora_all");
  torch::manual_seed(5);
  lrhost::ckpt::save_pretrained(*tiny_policy(write_vlm(dir, false)), dir / "pretrained");
  const json peft{{"peft", {{"method_type", "LORA"}, {"target_modules", "all-linear"}, {"init_type", "false"}}}};
  auto adapted = lrhost::ckpt::load_pretrained(dir / "pretrained", true, peft);
  adapted->train();
  auto batch = tiny_batch();
  adapted->forward(batch).loss.backward();
  // A block that applied its Linear without apply_linear (linear.hpp) would leave its adapter
  // without a gradient, silently training nothing there. The only ones without are those of modules
  // whose output the loss never reads, as in LeRobot: the VLM's head, and in the last VLM layer all
  // but k/v (the expert reads the VLM's keys and values; the prefix's own output ends there).
  std::vector<std::string> unread;
  const std::string last = "model.vlm_with_expert.vlm.model.text_model.layers.3.";
  for (const char* module : {"self_attn.q_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
    for (const char* part : {"lora_A", "lora_B"}) unread.push_back(last + module + "." + part + ".weight");
  for (const char* part : {"lora_A", "lora_B"})
    unread.push_back(std::string("model.vlm_with_expert.vlm.lm_head.") + part + ".weight");
  std::sort(unread.begin(), unread.end());
  CHECK(lrhost::test::lora_parameters_without_gradient(*adapted) == unread);
}

TEST_CASE("smolvla lora: an adapter folder trains on; policy.peft asking for other adapters is refused") {
  lrhost::test::TempDir dir("smolvla_lora_folder");
  torch::manual_seed(5);
  lrhost::ckpt::save_pretrained(*tiny_policy(write_vlm(dir, false)), dir / "pretrained");
  const json lora{{"peft", {{"method_type", "LORA"}}}};
  auto adapted = lrhost::ckpt::load_pretrained(dir / "pretrained", true, lora);
  lrhost::ckpt::save_pretrained(*adapted, dir / "adapters");
  CHECK(fs::exists(dir / "adapters" / "adapter_config.json"));
  CHECK(!fs::exists(dir / "adapters" / "model.safetensors"));
  // As lerobot-train: the same --peft line on the folder trains its adapters.
  for (const json& changes : {json::object(), lora}) {
    auto again = lrhost::ckpt::load_pretrained(dir / "adapters", true, changes);
    REQUIRE(again->lora_adapters());
    CHECK(again->lora_adapters()->selection.adapted == adapted->lora_adapters()->selection.adapted);
  }
  const json other{{"peft", {{"method_type", "LORA"}, {"r", 8}}}};
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          lrhost::ckpt::load_pretrained(dir / "adapters", true, other);
        }).find("asks for others ('r 8 vs 16'") != std::string::npos);
  // use_peft without adapter_config.json: LeRobot's lerobot#3975 trap, explained.
  fs::remove(dir / "adapters" / "adapter_config.json");
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          lrhost::ckpt::load_pretrained(dir / "adapters", true);
        }).find("use_peft: true") != std::string::npos);
}
