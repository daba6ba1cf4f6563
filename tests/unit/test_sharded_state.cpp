// FSDP sharded training state (host/ckpt/sharded_state) without an engine or communication: ranks
// are simulated in one process by modules whose parameters hold shard_of(full, rank) and optimizers
// stepped with shard gradients, so their state is shard-shaped as under FSDP. Saving every rank's
// file and loading at the same or another rank count (4->4, 4->2, 2->3, with padding-only ranks and
// a 0-d parameter) must give exactly the original rows of parameters and optimizer state; damaged
// folders (missing or truncated shard file, missing or corrupt index, an index that does not match
// the model) must be DataErrors naming the file and must leave the model untouched.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "host/ckpt/sharded_state.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/optim/optimizer.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace ckpt = lrhost::ckpt;
namespace io = lrhost::io;
namespace fsdp = lrhost::dist::fsdp;
using lrhost::optim::Optimizer;
using lrhost::policy::ParamGroup;
using lrhost::test::TempDir;
using lrhost::util::DataError;
using nlohmann::json;

namespace {

// Rows 5 and 2 do not divide by 2, 3 or 4; at 3 and 4 ranks head.weight leaves ranks with padding only.
struct Model : torch::nn::Module {
  torch::nn::Linear enc{nullptr}, head{nullptr};
  torch::Tensor temperature;
  Model() {
    enc = register_module("enc", torch::nn::Linear(3, 5));                                          // [5,3], [5]
    head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(4, 2).bias(false)));  // [2,4]
    temperature = register_parameter("temperature", torch::tensor(1.5));                            // 0-d
  }
};

using Tensors = std::map<std::string, torch::Tensor>;

std::vector<fsdp::UnitLayout> units_of(Model& model, int shard_size) {
  auto p = model.named_parameters();
  return {fsdp::make_unit_layout("enc", "Linear", {{"enc.weight", p["enc.weight"]}, {"enc.bias", p["enc.bias"]}},
                                 shard_size),
          fsdp::make_unit_layout("root", "root", {{"head.weight", p["head.weight"]}, {"temperature", p["temperature"]}},
                                 shard_size)};
}

json options_of(const std::string& kind) {
  return kind == "sgd" ? json{{"lr", 0.1}, {"momentum", 0.9}} : json{{"lr", 0.01}, {"weight_decay", 0.1}};
}

// One simulated rank: a model whose sharded parameters hold this rank's padded shards.
struct Rank {
  std::shared_ptr<Model> model = std::make_shared<Model>();
  fsdp::ShardingView view;
  std::unique_ptr<Optimizer> optimizer;
  ckpt::ShardLookup lookup() const {
    auto model_ref = model;
    return [model_ref](const std::string& name) { return model_ref->named_parameters()[name]; };
  }
  torch::Tensor param(const std::string& name) const { return model->named_parameters()[name]; }
  Tensors state(const std::string& name) const {
    Tensors out;
    for (auto& [key, tensor] : lrhost::optim::param_state_tensors(*optimizer, param(name))) out[key] = tensor;
    return out;
  }
};

// `size` ranks holding shards of `full` (zeros when empty), each with an optimizer without state.
std::vector<Rank> make_ranks(int size, const Tensors& full, const std::string& kind) {
  std::vector<Rank> ranks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    auto& rank = ranks[static_cast<std::size_t>(r)];
    rank.view.shard_rank = r;
    rank.view.shard_size = size;
    rank.view.units = units_of(*rank.model, size);
    torch::NoGradGuard no_grad;
    for (const auto& unit : rank.view.units)
      for (const auto& spec : unit.params) {
        auto p = rank.param(spec.name);
        p.set_data(full.empty() ? torch::zeros(spec.shard_shape()) : fsdp::shard_of(spec, full.at(spec.name), r));
      }
    rank.optimizer = std::make_unique<Optimizer>(
        kind, std::vector<ParamGroup>{{"all", rank.model->parameters(), {}, {}}}, options_of(kind));
  }
  return ranks;
}

// One optimizer step on every rank with the shards of the full gradients `grads`.
void step_all(std::vector<Rank>& ranks, const Tensors& grads) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& unit : ranks[r].view.units)
      for (const auto& spec : unit.params)
        ranks[r].param(spec.name).mutable_grad() = fsdp::shard_of(spec, grads.at(spec.name), static_cast<int>(r));
    ranks[r].optimizer->step();
  }
}

Tensors random_like(Model& model, int64_t seed) {
  torch::manual_seed(seed);
  Tensors out;
  for (auto& item : model.named_parameters()) out[item.key()] = torch::randn(item.value().sizes());
  return out;
}

// Full (unsharded) parameters ("param") and optimizer state ("<key>") of every parameter, gathered
// from the ranks' shards.
std::map<std::string, Tensors> gather(const std::vector<Rank>& ranks) {
  std::map<std::string, Tensors> full;
  for (const auto& unit : ranks[0].view.units)
    for (const auto& spec : unit.params) {
      std::vector<torch::Tensor> params;
      std::map<std::string, std::vector<torch::Tensor>> state;
      for (const auto& rank : ranks) {
        params.push_back(rank.param(spec.name).detach().clone());
        for (auto& [key, tensor] : rank.state(spec.name)) state[key].push_back(tensor.clone());
      }
      full[spec.name]["param"] = fsdp::unshard(spec, params);
      for (auto& [key, shards] : state)
        full[spec.name][key] = key == "step" ? shards.front() : fsdp::unshard(spec, shards);
    }
  return full;
}

// `list_optim` false: an index without the optimizer key lists (loaders then take them from the files).
void save_all(const std::filesystem::path& dir, const std::vector<Rank>& ranks, bool list_optim = true) {
  for (const auto& rank : ranks)
    ckpt::write_rank_shards(dir / ckpt::shard_file_name(rank.view.shard_rank), rank.view, rank.lookup(),
                            rank.optimizer.get());
  auto index = list_optim ? ckpt::shard_index(ranks[0].view, ranks[0].lookup(), ranks[0].optimizer.get())
                          : ckpt::shard_index(ranks[0].view);
  io::write_file_atomic(dir / ckpt::kShardIndexFile, index.dump(2));
}

// Every rank of `ranks` holds exactly shard_of(original) of every parameter and state tensor.
void check_exact(const std::vector<Rank>& ranks, const std::map<std::string, Tensors>& original) {
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const auto& unit : ranks[r].view.units)
      for (const auto& spec : unit.params) {
        CAPTURE(r);
        CAPTURE(spec.name);
        const auto& want = original.at(spec.name);
        auto param = ranks[r].param(spec.name);
        CHECK((param.sizes() == c10::IntArrayRef(spec.shard_shape())));
        CHECK((torch::equal(param, fsdp::shard_of(spec, want.at("param"), static_cast<int>(r)))));
        auto state = ranks[r].state(spec.name);
        CHECK(state.size() == want.size() - 1);
        for (const auto& [key, tensor] : want) {
          if (key == "param") continue;
          CAPTURE(key);
          REQUIRE(state.count(key));
          if (key == "step")
            CHECK((torch::equal(state.at(key), tensor)));
          else
            CHECK((torch::equal(state.at(key), fsdp::shard_of(spec, tensor, static_cast<int>(r)))));
        }
      }
}

std::string data_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const DataError& error) {
    return error.what();
  }
  return "(no DataError)";
}

}  // namespace

TEST_CASE("sharded state resumes at the same or another rank count with exactly the saved rows") {
  for (const std::string kind : {"adamw", "sgd"}) {
    for (auto [before, after] : {std::pair{4, 4}, std::pair{4, 2}, std::pair{2, 3}}) {
      CAPTURE(kind);
      CAPTURE(before);
      CAPTURE(after);
      Model reference;
      const Tensors initial = random_like(reference, 1);
      auto saved = make_ranks(before, initial, kind);
      step_all(saved, random_like(reference, 2));
      step_all(saved, random_like(reference, 3));
      const auto original = gather(saved);
      CHECK(original.at("enc.weight").count(kind == "sgd" ? "momentum_buffer" : "exp_avg_sq"));

      TempDir dir("sharded_state");
      const bool list_optim = before != 2;
      CAPTURE(list_optim);
      save_all(dir.path, saved, list_optim);
      CHECK(ckpt::missing_shard_files(dir.path).empty());
      auto loaded = make_ranks(after, {}, kind);
      std::vector<void*> identities;
      for (auto& rank : loaded) {
        for (auto& p : rank.model->parameters()) identities.push_back(p.unsafeGetTensorImpl());
        ckpt::load_rank_shards(dir.path, rank.view, rank.lookup(), rank.optimizer.get());
      }
      check_exact(loaded, original);
      // Values went into the existing tensors, which still key the optimizer's state.
      std::size_t i = 0;
      for (auto& rank : loaded)
        for (auto& p : rank.model->parameters()) CHECK(p.unsafeGetTensorImpl() == identities[i++]);

      // Training continues as it would have on the saved ranks (both optimizers are elementwise).
      const Tensors grads = random_like(reference, 4);
      step_all(saved, grads);
      step_all(loaded, grads);
      check_exact(loaded, gather(saved));
    }
  }
}

TEST_CASE("sharded state without optimizer state restores parameters and clears stale state") {
  Model reference;
  auto saved = make_ranks(2, random_like(reference, 5), "adamw");  // never stepped: no state
  TempDir dir("sharded_state");
  save_all(dir.path, saved);
  auto loaded = make_ranks(3, random_like(reference, 6), "adamw");
  step_all(loaded, random_like(reference, 7));  // stale state that must not survive the load
  for (auto& rank : loaded) ckpt::load_rank_shards(dir.path, rank.view, rank.lookup(), rank.optimizer.get());
  check_exact(loaded, gather(saved));
  for (auto& rank : loaded) CHECK(rank.optimizer->torch_optimizer().state().empty());
}

TEST_CASE("frozen units stay out of the shard files; a folder that holds them still loads") {
  Model reference;
  const Tensors initial = random_like(reference, 8);
  auto freeze_enc = [](std::vector<Rank>& ranks) {
    for (auto& rank : ranks) rank.view.units[0].frozen = true;  // the "enc" unit
  };
  auto saved = make_ranks(2, initial, "adamw");
  step_all(saved, random_like(reference, 9));
  const auto original = gather(saved);

  // Written frozen: neither the index nor any file mentions enc.*.
  TempDir dir("sharded_state");
  freeze_enc(saved);
  save_all(dir.path, saved);
  const auto index = io::read_json_file(dir.path / ckpt::kShardIndexFile, "");
  CHECK(index["params"].size() == 2);
  CHECK_FALSE(index["params"].contains("enc.weight"));
  for (int r = 0; r < 2; ++r) {
    auto content = io::read_safetensors(dir.path / ckpt::shard_file_name(r));
    CHECK(content.find("param/head.weight") != nullptr);
    CHECK(content.find("param/enc.weight") == nullptr);
    CHECK(content.find("optim/enc.weight/exp_avg") == nullptr);
  }
  auto loaded = make_ranks(3, {}, "adamw");  // zeros everywhere
  freeze_enc(loaded);
  for (auto& rank : loaded) {
    const auto names = ckpt::load_rank_shards(dir.path, rank.view, rank.lookup(), rank.optimizer.get());
    CHECK(names == std::set<std::string>{"head.weight", "temperature"});
    CHECK(torch::equal(rank.param("enc.weight"), torch::zeros_like(rank.param("enc.weight"))));
    CHECK(torch::equal(
        rank.param("head.weight"),
        fsdp::shard_of(*rank.view.find("head.weight"), original.at("head.weight").at("param"), rank.view.shard_rank)));
  }

  // Written before frozen units were left out (here: written unfrozen), loaded frozen: restored too.
  TempDir old_dir("sharded_state");
  auto unfrozen = make_ranks(2, initial, "adamw");
  step_all(unfrozen, random_like(reference, 9));
  save_all(old_dir.path, unfrozen);
  auto reloaded = make_ranks(3, {}, "adamw");
  freeze_enc(reloaded);
  for (auto& rank : reloaded)
    CHECK(ckpt::load_rank_shards(old_dir.path, rank.view, rank.lookup(), rank.optimizer.get()).size() == 4);
  check_exact(reloaded, original);

  // A trainable parameter the files lack is still the mismatch it was.
  auto trainable = make_ranks(2, {}, "adamw");
  CHECK(data_error([&] {
          ckpt::load_rank_shards(dir.path, trainable[0].view, trainable[0].lookup(), trainable[0].optimizer.get());
        }).find("missing 'enc.bias', 'enc.weight'") != std::string::npos);
}

TEST_CASE("EMA shadow rows in the shard files re-slice at another rank count exactly") {
  Model reference;
  const Tensors shadows_full = random_like(reference, 11);  // an EMA's full shadows
  auto saved = make_ranks(4, random_like(reference, 10), "adamw");
  // Each rank's shadows: its shards of the full ones, fp32.
  auto shadows_of = [&](const std::vector<Rank>& ranks) {
    std::vector<std::map<std::string, torch::Tensor>> out(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r)
      for (const auto& unit : ranks[r].view.units)
        for (const auto& spec : unit.params)
          out[r][spec.name] = fsdp::shard_of(spec, shadows_full.at(spec.name), static_cast<int>(r));
    return out;
  };
  auto saved_shadows = shadows_of(saved);
  TempDir dir("sharded_state");
  for (std::size_t r = 0; r < saved.size(); ++r) {
    auto& held = saved_shadows[r];
    io::write_safetensors(dir.path / ckpt::shard_file_name(static_cast<int>(r)),
                          ckpt::rank_shard_tensors(saved[r].view, saved[r].lookup(), nullptr,
                                                   [&held](const std::string& name) { return held.at(name); }),
                          ckpt::rank_shard_metadata(saved[r].view));
  }
  io::write_file_atomic(dir.path / ckpt::kShardIndexFile,
                        ckpt::shard_index(saved[0].view, saved[0].lookup(), nullptr, /*ema=*/true).dump(2));
  CHECK(ckpt::shards_hold_ema(dir.path));
  auto loaded = make_ranks(2, {}, "adamw");
  for (std::size_t r = 0; r < loaded.size(); ++r) {
    std::map<std::string, torch::Tensor> into;
    for (const auto& unit : loaded[r].view.units)
      for (const auto& spec : unit.params) into[spec.name] = torch::zeros(spec.shard_shape());
    ckpt::load_rank_shards(dir.path, loaded[r].view, loaded[r].lookup(), nullptr,
                           [&into](const std::string& name) { return into.at(name); });
    for (const auto& unit : loaded[r].view.units)
      for (const auto& spec : unit.params) {
        CAPTURE(spec.name);
        CHECK(torch::equal(into.at(spec.name), fsdp::shard_of(spec, shadows_full.at(spec.name), static_cast<int>(r))));
      }
  }
  // Files without shadows, asked for them: a DataError naming the index.
  TempDir plain("sharded_state");
  save_all(plain.path, saved);
  CHECK_FALSE(ckpt::shards_hold_ema(plain.path));
  auto lookup = [](const std::string&) { return torch::zeros({1}); };
  CHECK(data_error([&] {
          ckpt::load_rank_shards(plain.path, loaded[0].view, loaded[0].lookup(), nullptr, lookup);
        }).find("the shards hold no EMA shadows") != std::string::npos);
}

TEST_CASE("damaged shard folders are DataErrors naming the file, and leave the model untouched") {
  Model reference;
  auto saved = make_ranks(4, random_like(reference, 8), "adamw");
  step_all(saved, random_like(reference, 9));
  TempDir dir("sharded_state");
  save_all(dir.path, saved);
  const auto index_text = io::read_text_file(dir / ckpt::kShardIndexFile);
  auto restore_index = [&] { io::write_file_atomic(dir / ckpt::kShardIndexFile, index_text); };
  auto edit_index = [&](const std::function<void(json&)>& edit) {
    auto index = json::parse(index_text);
    edit(index);
    io::write_file_atomic(dir / ckpt::kShardIndexFile, index.dump());
  };
  // Rank 1 of 2 holds enc.weight rows [3, 5): saved ranks 1 ([2, 4)) and 2 ([4, 5)).
  auto target = make_ranks(2, {}, "adamw");
  auto load = [&] { ckpt::load_rank_shards(dir.path, target[1].view, target[1].lookup(), target[1].optimizer.get()); };
  auto untouched = [&] {
    for (auto& p : target[1].model->parameters()) CHECK((torch::equal(p, torch::zeros_like(p))));
    CHECK(target[1].optimizer->torch_optimizer().state().empty());
  };

  SUBCASE("missing shard file") {
    std::filesystem::rename(dir / "rank_2.safetensors", dir / "moved.safetensors");
    CHECK(ckpt::missing_shard_files(dir.path) == std::vector<std::string>{"rank_2.safetensors"});
    auto message = data_error(load);
    CHECK(message.find("rank_2.safetensors") != std::string::npos);
    CHECK(message.find("missing") != std::string::npos);
    untouched();
    // Rank 0 of 2 (rows [0, 3) of enc.weight) does not need rank 2's file.
    ckpt::load_rank_shards(dir.path, target[0].view, target[0].lookup(), target[0].optimizer.get());
  }
  SUBCASE("truncated shard file") {
    std::filesystem::resize_file(dir / "rank_1.safetensors", 100);
    CHECK(data_error(load).find("rank_1.safetensors") != std::string::npos);
    untouched();
  }
  SUBCASE("a shard file without a tensor the index promises") {
    io::write_safetensors(dir / "rank_1.safetensors", {{"param/enc.weight", torch::zeros({2, 3})}});
    auto message = data_error(load);
    CHECK(message.find("rank_1.safetensors") != std::string::npos);
    untouched();
  }
  SUBCASE("missing or corrupt index") {
    std::filesystem::remove(dir / ckpt::kShardIndexFile);
    CHECK(data_error(load).find("index.json") != std::string::npos);
    CHECK(ckpt::missing_shard_files(dir.path) == std::vector<std::string>{"index.json"});
    io::write_file_atomic(dir / ckpt::kShardIndexFile, "{\"format\": 1, \"shard_");
    CHECK(data_error(load).find("index.json") != std::string::npos);
    restore_index();
    untouched();
  }
  SUBCASE("an index naming a parameter the model lacks") {
    edit_index([](json& index) { index["params"]["ghost.weight"] = index["params"]["enc.weight"]; });
    auto message = data_error(load);
    CHECK(message.find("index.json") != std::string::npos);
    CHECK(message.find("unexpected 'ghost.weight'") != std::string::npos);
    edit_index([](json& index) { index["params"].erase("enc.bias"); });
    CHECK(data_error(load).find("missing 'enc.bias'") != std::string::npos);
    untouched();
  }
  SUBCASE("an index whose shapes, dtypes or rows do not match") {
    edit_index([](json& index) { index["params"]["enc.weight"]["shape"] = {6, 3}; });
    auto message = data_error(load);
    CHECK(message.find("index.json") != std::string::npos);
    CHECK(message.find("enc.weight") != std::string::npos);
    edit_index([](json& index) { index["params"]["enc.bias"]["dtype"] = "F64"; });
    CHECK(data_error(load).find("enc.bias") != std::string::npos);
    edit_index([](json& index) { index["params"]["enc.bias"]["rows_per_rank"] = 3; });
    CHECK(data_error(load).find("rows_per_rank") != std::string::npos);
    edit_index([](json& index) { index["params"]["enc.bias"]["ranges"][1] = {2, 3}; });
    CHECK(data_error(load).find("ranges") != std::string::npos);
    edit_index([](json& index) { index["files"].erase(3); });
    CHECK(data_error(load).find("'files'") != std::string::npos);
    untouched();
  }
}
