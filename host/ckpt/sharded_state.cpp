// Writing and re-slicing FSDP shard files; see sharded_state.hpp.
#include "host/ckpt/sharded_state.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

constexpr int kFormat = 1;
constexpr const char* kDamaged = "the shards folder is damaged; resume from another checkpoint";

int64_t integer(const ordered_json& object, const char* key, const fs::path& file, const std::string& where) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer())
    throw util::DataError(file.string() + ": " + where + " needs an integer '" + key + "'", kDamaged);
  return object[key].get<int64_t>();
}

std::string rows_text(int64_t begin, int64_t end) {
  return "rows [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// The shard tensor of `spec`, checked against the layout (a wrong shape means the lookup does not
// hand out FSDP shards).
torch::Tensor checked_shard(const ShardLookup& local_shard, const dist::fsdp::ParamShardSpec& spec) {
  auto shard = local_shard(spec.name);
  if (!shard.defined() || shard.sizes() != c10::IntArrayRef(spec.shard_shape()))
    throw util::Error("sharded state: parameter '" + spec.name + "' holds " +
                      (shard.defined() ? c10::str(shard.sizes()) : std::string("nothing")) +
                      ", expected its shard shaped " + c10::str(c10::IntArrayRef(spec.shard_shape())));
  return shard;
}

// What the index says about one saved parameter, checked against the current model.
struct SavedParam {
  int64_t rows_per_rank = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;     // per saved shard rank
  std::optional<std::vector<std::string>> optim_keys;  // absent in indexes that do not list them
};

SavedParam check_saved_param(const ordered_json& entry, const dist::fsdp::ParamShardSpec& spec, int64_t saved_shards,
                             const fs::path& index_file) {
  const std::string where = "parameter '" + spec.name + "'";
  if (!entry.is_object() || !entry.contains("shape") || !entry["shape"].is_array() ||
      entry["shape"] != ordered_json(spec.shape) || !entry.contains("dtype") ||
      entry["dtype"] != io::safetensors_dtype(spec.dtype))
    throw util::DataError(
        index_file.string() + ": " + where + " is " +
            (entry.is_object()
                 ? entry.value("shape", ordered_json()).dump() + " " + entry.value("dtype", ordered_json()).dump()
                 : entry.dump()) +
            ", the model has " + ordered_json(spec.shape).dump() + " " + io::safetensors_dtype(spec.dtype),
        "resume with the policy config the checkpoint was written with");
  SavedParam saved;
  saved.rows_per_rank = integer(entry, "rows_per_rank", index_file, where);
  if (saved.rows_per_rank != (spec.rows + saved_shards - 1) / saved_shards)
    throw util::DataError(index_file.string() + ": " + where + " has rows_per_rank " +
                              std::to_string(saved.rows_per_rank) + ", which does not fit " +
                              std::to_string(spec.rows) + " rows over " + std::to_string(saved_shards) + " shards",
                          kDamaged);
  for (int64_t r = 0; r < saved_shards; ++r)
    saved.ranges.emplace_back(std::min(spec.rows, r * saved.rows_per_rank),
                              std::min(spec.rows, (r + 1) * saved.rows_per_rank));
  // The recorded ranges are informative; they must agree with the arithmetic.
  if (entry.contains("ranges")) {
    bool same = entry["ranges"].is_array() && entry["ranges"].size() == saved.ranges.size();
    for (std::size_t r = 0; same && r < saved.ranges.size(); ++r) {
      const auto& range = entry["ranges"][r];
      same = range.is_array() && range.size() == 2 && range[0] == saved.ranges[r].first &&
             range[1] == saved.ranges[r].second;
    }
    if (!same)
      throw util::DataError(index_file.string() + ": " + where + " has ranges " + entry["ranges"].dump() +
                                ", which do not split " + std::to_string(spec.rows) + " rows into blocks of " +
                                std::to_string(saved.rows_per_rank),
                            kDamaged);
  }
  if (entry.contains("optim")) {
    const auto& keys = entry["optim"];
    if (!keys.is_array() || !std::all_of(keys.begin(), keys.end(), [](const auto& k) { return k.is_string(); }))
      throw util::DataError(
          index_file.string() + ": " + where + " needs 'optim' as a list of names, got " + keys.dump(), kDamaged);
    saved.optim_keys = keys.get<std::vector<std::string>>();
  }
  return saved;
}

// This rank's rows of one parameter and its optimizer state, assembled from the saved files.
struct Restored {
  const dist::fsdp::ParamShardSpec* spec = nullptr;
  torch::Tensor param;                         // shard_shape()
  std::map<std::string, torch::Tensor> state;  // by torch's names, shard-shaped (step 0-d)
  torch::Tensor ema;                           // the EMA shadow's rows, when asked for
};

}  // namespace

bool in_shard_files(const dist::fsdp::UnitLayout& unit) {
  return !unit.frozen;
}

std::string shard_file_name(int shard_rank) {
  return "rank_" + std::to_string(shard_rank) + ".safetensors";
}

ShardLookup ema_shard_lookup(const optim::WeightEma* ema) {
  if (ema == nullptr) return {};
  return [ema](const std::string& name) { return ema->shadow(name); };
}

std::vector<std::pair<std::string, torch::Tensor>> rank_shard_tensors(const dist::fsdp::ShardingView& view,
                                                                      const ShardLookup& local_shard,
                                                                      optim::Optimizer* optimizer,
                                                                      const ShardLookup& ema) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& unit : view.units) {
    if (!in_shard_files(unit)) continue;
    for (const auto& spec : unit.params) {
      auto shard = checked_shard(local_shard, spec);
      tensors.emplace_back("param/" + spec.name, shard.detach().to(torch::kCPU).contiguous());
      if (ema) tensors.emplace_back("ema/" + spec.name, ema(spec.name).detach().to(torch::kCPU).contiguous());
      if (optimizer == nullptr) continue;
      // The optimizer's state is keyed by the parameter tensor itself (TensorImpl identity).
      for (const auto& [key, tensor] : optim::param_state_tensors(*optimizer, shard))
        tensors.emplace_back("optim/" + spec.name + "/" + key, tensor.detach().to(torch::kCPU).contiguous());
    }
  }
  return tensors;
}

std::vector<std::pair<std::string, torch::Tensor>> rank_shard_tensors(const dist::fsdp::FsdpEngine& fsdp,
                                                                      optim::Optimizer* optimizer,
                                                                      const optim::WeightEma* ema) {
  return rank_shard_tensors(
      fsdp.view(), [&](const std::string& name) { return fsdp.local_shard(name); }, optimizer, ema_shard_lookup(ema));
}

std::map<std::string, std::string> rank_shard_metadata(const dist::fsdp::ShardingView& view) {
  return {{"format", "lrhost-fsdp-shard"},
          {"shard_rank", std::to_string(view.shard_rank)},
          {"shard_size", std::to_string(view.shard_size)}};
}

void write_rank_shards(const fs::path& file, const dist::fsdp::ShardingView& view, const ShardLookup& local_shard,
                       optim::Optimizer* optimizer) {
  io::write_safetensors(file, rank_shard_tensors(view, local_shard, optimizer), rank_shard_metadata(view));
}

void write_rank_shards(const fs::path& file, const dist::fsdp::FsdpEngine& fsdp, optim::Optimizer* optimizer) {
  write_rank_shards(
      file, fsdp.view(), [&](const std::string& name) { return fsdp.local_shard(name); }, optimizer);
}

ordered_json shard_index(const dist::fsdp::ShardingView& view, const ShardLookup& local_shard,
                         optim::Optimizer* optimizer, bool ema) {
  ordered_json index;
  index["format"] = kFormat;
  index["shard_size"] = view.shard_size;
  index["replicate_size"] = view.replicate_size;
  ordered_json files = ordered_json::array();
  for (int r = 0; r < view.shard_size; ++r) files.push_back(shard_file_name(r));
  index["files"] = files;
  if (ema) index["ema"] = true;
  ordered_json params = ordered_json::object();
  for (const auto& unit : view.units) {
    if (!in_shard_files(unit)) continue;
    for (const auto& spec : unit.params) {
      ordered_json ranges = ordered_json::array();
      for (int r = 0; r < view.shard_size; ++r) {
        auto [begin, end] = spec.row_range(r);
        ranges.push_back({begin, end});
      }
      params[spec.name] = {{"unit", unit.name},
                           {"shape", spec.shape},
                           {"dtype", io::safetensors_dtype(spec.dtype)},
                           {"rows", spec.rows},
                           {"rows_per_rank", spec.rows_per_rank},
                           {"ranges", ranges}};
      if (optimizer != nullptr && local_shard) {
        ordered_json keys = ordered_json::array();
        for (const auto& [key, tensor] : optim::param_state_tensors(*optimizer, checked_shard(local_shard, spec)))
          keys.push_back(key);
        params[spec.name]["optim"] = keys;
      }
    }
  }
  index["params"] = params;
  return index;
}

ordered_json shard_index(const dist::fsdp::FsdpEngine& fsdp, optim::Optimizer* optimizer, const optim::WeightEma* ema) {
  return shard_index(
      fsdp.view(), [&](const std::string& name) { return fsdp.local_shard(name); }, optimizer, ema != nullptr);
}

bool shards_hold_ema(const fs::path& shards_dir) {
  const fs::path index_file = shards_dir / kShardIndexFile;
  std::error_code ec;
  if (!fs::exists(index_file, ec)) return false;
  const auto index = io::read_json_file(index_file, kDamaged);
  return index.value("ema", false);
}

std::vector<std::string> missing_shard_files(const fs::path& shards_dir) {
  const fs::path index_file = shards_dir / kShardIndexFile;
  std::error_code ec;
  if (!fs::exists(index_file, ec)) return {kShardIndexFile};
  ordered_json index;
  try {
    index = io::read_json_file(index_file, "");
  } catch (const std::exception&) {
    return {kShardIndexFile};
  }
  std::vector<std::string> missing;
  if (!index.contains("files") || !index["files"].is_array()) return {kShardIndexFile};
  for (const auto& name : index["files"])
    if (!name.is_string() || !fs::exists(shards_dir / name.get<std::string>(), ec))
      missing.push_back(name.is_string() ? name.get<std::string>() : name.dump());
  return missing;
}

std::set<std::string> load_rank_shards(const fs::path& shards_dir, const dist::fsdp::ShardingView& view,
                                       const ShardLookup& local_shard, optim::Optimizer* optimizer,
                                       const ShardLookup& ema) {
  const fs::path index_file = shards_dir / kShardIndexFile;
  std::error_code ec;
  if (!fs::exists(index_file, ec))
    throw util::DataError(index_file.string() + ": missing; an FSDP shards folder needs its index", kDamaged);
  ordered_json index = io::read_json_file(index_file, kDamaged);
  if (integer(index, "format", index_file, "the index") != kFormat)
    throw util::DataError(index_file.string() + ": unknown shard index format " + index["format"].dump() +
                          " (this lrhost reads format " + std::to_string(kFormat) + ")");
  const int64_t saved_shards = integer(index, "shard_size", index_file, "the index");
  if (saved_shards < 1 || !index.contains("params") || !index["params"].is_object())
    throw util::DataError(index_file.string() + ": needs shard_size >= 1 and a 'params' object", kDamaged);
  if (!index.contains("files") || !index["files"].is_array() ||
      index["files"].size() != static_cast<std::size_t>(saved_shards) ||
      !std::all_of(index["files"].begin(), index["files"].end(), [](const auto& f) { return f.is_string(); }))
    throw util::DataError(index_file.string() + ": 'files' must list " + std::to_string(saved_shards) +
                              " file names (one per shard rank)",
                          kDamaged);
  const auto& params = index["params"];
  if (ema && !index.value("ema", false))
    throw util::DataError(index_file.string() + ": the shards hold no EMA shadows", kDamaged);

  // The saved and current trainable parameter sets must agree; frozen ones may be saved or not.
  std::set<std::string> trainable, frozen, saved;
  for (const auto& unit : view.units)
    for (const auto& spec : unit.params) (in_shard_files(unit) ? trainable : frozen).insert(spec.name);
  for (const auto& [name, entry] : params.items()) saved.insert(name);
  std::vector<std::string> missing, unexpected;
  for (const auto& name : trainable)
    if (!saved.count(name)) missing.push_back(name);
  for (const auto& name : saved)
    if (!trainable.count(name) && !frozen.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty()) {
    auto list = [](const std::vector<std::string>& names) {
      std::string text;
      for (std::size_t i = 0; i < names.size() && i < 10; ++i) text += (i ? ", '" : "'") + names[i] + "'";
      return names.size() > 10 ? text + ", ..." : text;
    };
    throw util::DataError(index_file.string() + ": the shards do not match this model (" +
                              (missing.empty() ? "" : "missing " + list(missing)) +
                              (missing.empty() || unexpected.empty() ? "" : "; ") +
                              (unexpected.empty() ? "" : "unexpected " + list(unexpected)) + ")",
                          "resume with the policy config and FSDP wrap units the checkpoint was written with");
  }

  // Shard files are opened (memory-mapped) on first use, so only the ones this rank needs are read.
  std::map<int64_t, io::SafetensorsContent> files;
  auto file_path = [&](int64_t rank) {
    return shards_dir / index["files"][static_cast<std::size_t>(rank)].get<std::string>();
  };
  auto file = [&](int64_t rank, const std::string& why) -> const io::SafetensorsContent& {
    auto found = files.find(rank);
    if (found != files.end()) return found->second;
    const fs::path path = file_path(rank);
    if (!fs::exists(path, ec))
      throw util::DataError(path.string() + ": missing; " + index_file.filename().string() + " lists it for " + why,
                            "the checkpoint is incomplete; resume from another one");
    return files.emplace(rank, io::read_safetensors(path)).first->second;
  };

  std::vector<Restored> restored;
  for (const auto& unit : view.units) {
    for (const auto& spec : unit.params) {
      if (!saved.count(spec.name)) continue;  // a frozen parameter the files leave out
      const auto saved_param = check_saved_param(params[spec.name], spec, saved_shards, index_file);
      const int64_t saved_rpr = saved_param.rows_per_rank;
      const auto [begin, end] = spec.row_range(view.shard_rank);
      std::vector<int64_t> sources;  // saved ranks whose rows overlap this rank's
      for (int64_t r = 0; r < saved_shards; ++r)
        if (std::max(begin, saved_param.ranges[r].first) < std::min(end, saved_param.ranges[r].second))
          sources.push_back(r);
      // The optimizer's keys and step are the same in every file; a rank holding only padding rows
      // takes them from rank 0's file, which always holds row 0.
      const int64_t first = sources.empty() ? 0 : sources.front();
      const std::string optim_prefix = "optim/" + spec.name + "/";
      Restored item;
      item.spec = &spec;
      item.param = torch::zeros({spec.rows_per_rank, spec.row_numel}, torch::TensorOptions().dtype(spec.dtype));
      // Frozen parameters have no shadow (weight_ema.hpp).
      const bool has_ema = ema && in_shard_files(unit);
      if (has_ema) item.ema = torch::zeros({spec.rows_per_rank, spec.row_numel}, torch::kFloat32);
      if (optimizer != nullptr) {
        const auto& content = file(first, "parameter '" + spec.name + "'");
        const std::string path = file_path(first).string();
        std::vector<std::string> keys;
        if (saved_param.optim_keys) {
          keys = *saved_param.optim_keys;
        } else {
          for (const auto& [name, tensor] : content.tensors)
            if (name.rfind(optim_prefix, 0) == 0) keys.push_back(name.substr(optim_prefix.size()));
        }
        for (const auto& key : keys) {
          const auto* tensor = content.find(optim_prefix + key);
          if (tensor == nullptr)
            throw util::DataError(path + ": has no tensor '" + optim_prefix + key + "', which the index lists",
                                  kDamaged);
          item.state[key] =
              key == "step" ? tensor->clone() : torch::zeros({spec.rows_per_rank, spec.row_numel}, tensor->options());
        }
      }
      for (int64_t r : sources) {
        const auto [saved_begin, saved_end] = saved_param.ranges[r];
        const int64_t lo = std::max(begin, saved_begin), hi = std::min(end, saved_end);
        const auto& content = file(r, "parameter '" + spec.name + "' " + rows_text(saved_begin, saved_end));
        const std::string path = file_path(r).string();
        auto copy_rows = [&](const std::string& name, torch::Tensor& into) {
          const auto* found = content.find(name);
          if (found == nullptr)
            throw util::DataError(path + ": has no tensor '" + name + "'; the index says it holds " +
                                      rows_text(saved_begin, saved_end) + " of '" + spec.name + "'",
                                  kDamaged);
          if (found->numel() != saved_rpr * spec.row_numel || found->scalar_type() != into.scalar_type())
            throw util::DataError(path + ": '" + name + "' is " + c10::str(found->sizes()) + " " +
                                      std::string(c10::toString(found->scalar_type())) + ", expected " +
                                      std::to_string(saved_rpr * spec.row_numel) + " elements of " +
                                      std::string(c10::toString(into.scalar_type())) + " (" +
                                      std::to_string(saved_rpr) + " rows per rank)",
                                  kDamaged);
          into.narrow(0, lo - begin, hi - lo)
              .copy_(found->reshape({saved_rpr, spec.row_numel}).narrow(0, lo - saved_begin, hi - lo));
        };
        copy_rows("param/" + spec.name, item.param);
        if (has_ema) copy_rows("ema/" + spec.name, item.ema);
        for (auto& [key, tensor] : item.state)
          if (key != "step") copy_rows(optim_prefix + key, tensor);
      }
      item.param = item.param.reshape(spec.shard_shape());
      if (has_ema) item.ema = item.ema.reshape(spec.shard_shape());
      for (auto& [key, tensor] : item.state)
        if (key != "step") tensor = tensor.reshape(spec.shard_shape());
      if (optimizer != nullptr && !item.state.empty())
        optim::check_param_state(optimizer->kind(), item.state, item.param.sizes(), spec.dtype,
                                 file_path(first).string(), "parameter '" + spec.name + "'", optim_prefix);
      restored.push_back(std::move(item));
    }
  }

  // Everything is read and checked: now the parameters (in place: the optimizer keys its state by
  // these tensors) and the optimizer state.
  std::vector<torch::Tensor> shards, shadows;
  for (const auto& item : restored) {
    shards.push_back(checked_shard(local_shard, *item.spec));
    shadows.push_back(item.ema.defined() ? checked_shard(ema, *item.spec) : torch::Tensor());
  }
  torch::NoGradGuard no_grad;
  std::set<std::string> names;
  for (std::size_t i = 0; i < restored.size(); ++i) {
    shards[i].detach().copy_(restored[i].param);
    if (shadows[i].defined()) shadows[i].copy_(restored[i].ema);
    names.insert(restored[i].spec->name);
    if (optimizer == nullptr) continue;
    if (restored[i].state.empty())
      optim::erase_param_state(*optimizer, shards[i]);
    else
      optim::set_param_state(*optimizer, shards[i], restored[i].state);
  }
  return names;
}

std::set<std::string> load_rank_shards(const fs::path& shards_dir, dist::fsdp::FsdpEngine& fsdp,
                                       optim::Optimizer* optimizer, const optim::WeightEma* ema) {
  return load_rank_shards(
      shards_dir, fsdp.view(), [&](const std::string& name) { return fsdp.local_shard(name); }, optimizer,
      ema_shard_lookup(ema));
}

void load_shards_unsharded(const fs::path& shards_dir,
                           const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
                           optim::Optimizer* optimizer, const optim::WeightEma* ema) {
  const fs::path index_file = shards_dir / kShardIndexFile;
  std::error_code ec;
  if (!fs::exists(index_file, ec))
    throw util::DataError(index_file.string() + ": missing; an FSDP shards folder needs its index", kDamaged);
  const ordered_json index = io::read_json_file(index_file, kDamaged);
  if (!index.contains("params") || !index["params"].is_object())
    throw util::DataError(index_file.string() + ": needs a 'params' object", kDamaged);
  // One unit on one rank (each spec's rows are all rows) over the parameters the shards hold, and
  // every trainable one: a trainable parameter the shards lack, or one the model lacks, is the
  // mismatch load_rank_shards names. Frozen parameters outside FSDP's units are in model.safetensors.
  std::map<std::string, torch::Tensor> by_name(parameters.begin(), parameters.end());
  // (Frozen ones the files hold, from before frozen units were left out, form a frozen unit: no EMA.)
  std::vector<std::pair<std::string, torch::Tensor>> trainable, frozen;
  for (const auto& [name, tensor] : parameters) {
    if (tensor.requires_grad())
      trainable.emplace_back(name, tensor);
    else if (index["params"].contains(name))
      frozen.emplace_back(name, tensor);
  }
  dist::fsdp::ShardingView view;
  view.units.push_back(dist::fsdp::make_unit_layout("root", "root", trainable, /*shard_size=*/1));
  if (!frozen.empty())
    view.units.push_back(dist::fsdp::make_unit_layout("root", "root", frozen, /*shard_size=*/1, /*frozen=*/true));
  load_rank_shards(
      shards_dir, view, [&](const std::string& name) { return by_name.at(name); }, optimizer, ema_shard_lookup(ema));
}

void load_full_optimizer_state_sharded(const fs::path& state_dir, dist::fsdp::FsdpEngine& fsdp,
                                       optim::Optimizer& optimizer) {
  const auto& view = fsdp.view();
  std::map<const torch::TensorImpl*, const dist::fsdp::ParamShardSpec*> specs;
  for (const auto& unit : view.units)
    for (const auto& spec : unit.params) specs[fsdp.local_shard(spec.name).unsafeGetTensorImpl()] = &spec;
  optim::load_optimizer_state(optimizer, state_dir,
                              [&](const torch::Tensor& param, const std::string& name, const torch::Tensor& saved) {
                                auto found = specs.find(param.unsafeGetTensorImpl());
                                if (found == specs.end() || name == "step") return saved;
                                const auto& spec = *found->second;
                                if (saved.sizes().vec() != spec.shape)
                                  return saved;  // the shape check that follows names the tensor
                                return dist::fsdp::shard_of(spec, saved, view.shard_rank);
                              });
}

}  // namespace lrhost::ckpt
