// Writing and re-slicing FSDP shard files; see sharded_state.hpp.
#include "host/ckpt/sharded_state.hpp"

#include <map>
#include <set>

#include "host/ckpt/atomic_dir.hpp"
#include "host/ckpt/safetensors.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

constexpr int kFormat = 1;

int64_t integer(const ordered_json& object, const char* key, const fs::path& file, const std::string& where) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer())
    throw util::DataError(file.string() + ": " + where + " needs an integer '" + key + "'",
                          "the shards folder is damaged; resume from another checkpoint");
  return object[key].get<int64_t>();
}

}  // namespace

std::string shard_file_name(int shard_rank) { return "rank_" + std::to_string(shard_rank) + ".safetensors"; }

void write_rank_shards(const fs::path& file, const dist::fsdp::FsdpEngine& fsdp, optim::Optimizer* optimizer) {
  const auto& view = fsdp.view();
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& unit : view.units) {
    for (const auto& spec : unit.params) {
      auto shard = fsdp.local_shard(spec.name);
      tensors.emplace_back("param/" + spec.name, shard.detach().to(torch::kCPU).contiguous());
      if (optimizer == nullptr) continue;
      for (const auto& [key, tensor] : optim::param_state_tensors(*optimizer, shard))
        tensors.emplace_back("optim/" + spec.name + "/" + key, tensor.detach().to(torch::kCPU).contiguous());
    }
  }
  write_safetensors(file, tensors,
                    {{"format", "lrhost-fsdp-shard"}, {"shard_rank", std::to_string(view.shard_rank)},
                     {"shard_size", std::to_string(view.shard_size)}});
}

ordered_json shard_index(const dist::fsdp::ShardingView& view) {
  ordered_json index;
  index["format"] = kFormat;
  index["shard_size"] = view.shard_size;
  index["replicate_size"] = view.replicate_size;
  ordered_json files = ordered_json::array();
  for (int r = 0; r < view.shard_size; ++r) files.push_back(shard_file_name(r));
  index["files"] = files;
  ordered_json params = ordered_json::object();
  for (const auto& unit : view.units) {
    for (const auto& spec : unit.params) {
      ordered_json ranges = ordered_json::array();
      for (int r = 0; r < view.shard_size; ++r) {
        auto [begin, end] = spec.row_range(r);
        ranges.push_back({begin, end});
      }
      params[spec.name] = {{"unit", unit.name},          {"shape", spec.shape},
                           {"dtype", safetensors_dtype(spec.dtype)}, {"rows", spec.rows},
                           {"rows_per_rank", spec.rows_per_rank},    {"ranges", ranges}};
    }
  }
  index["params"] = params;
  return index;
}

std::vector<std::string> missing_shard_files(const fs::path& shards_dir) {
  const fs::path index_file = shards_dir / kShardIndexFile;
  std::error_code ec;
  if (!fs::exists(index_file, ec)) return {kShardIndexFile};
  ordered_json index;
  try {
    index = read_json_file(index_file, "");
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

void load_rank_shards(const fs::path& shards_dir, dist::fsdp::FsdpEngine& fsdp, optim::Optimizer* optimizer) {
  const fs::path index_file = shards_dir / kShardIndexFile;
  const std::string hint = "the shards folder is damaged; resume from another checkpoint";
  ordered_json index = read_json_file(index_file, hint);
  if (integer(index, "format", index_file, "the index") != kFormat)
    throw util::DataError(index_file.string() + ": unknown shard index format " + index["format"].dump() +
                          " (this lrhost reads format " + std::to_string(kFormat) + ")");
  const int64_t saved_shards = integer(index, "shard_size", index_file, "the index");
  if (saved_shards < 1 || !index.contains("params") || !index["params"].is_object())
    throw util::DataError(index_file.string() + ": needs shard_size >= 1 and a 'params' object", hint);
  const auto& params = index["params"];
  const auto& view = fsdp.view();

  // The saved and current parameter sets must agree.
  std::set<std::string> current, saved;
  for (const auto& unit : view.units)
    for (const auto& spec : unit.params) current.insert(spec.name);
  for (const auto& [name, entry] : params.items()) saved.insert(name);
  std::vector<std::string> missing, unexpected;
  for (const auto& name : current)
    if (!saved.count(name)) missing.push_back(name);
  for (const auto& name : saved)
    if (!current.count(name)) unexpected.push_back(name);
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

  std::map<int64_t, SafetensorsContent> files;
  auto file = [&](int64_t rank) -> const SafetensorsContent& {
    auto found = files.find(rank);
    if (found != files.end()) return found->second;
    return files.emplace(rank, read_safetensors(shards_dir / shard_file_name(static_cast<int>(rank)))).first->second;
  };
  auto shard_file = [&](int64_t rank) { return (shards_dir / shard_file_name(static_cast<int>(rank))).string(); };

  torch::NoGradGuard no_grad;
  for (const auto& unit : view.units) {
    for (const auto& spec : unit.params) {
      const auto& entry = params[spec.name];
      const std::string where = "parameter '" + spec.name + "'";
      if (!entry.contains("shape") || entry["shape"].get<std::vector<int64_t>>() != spec.shape ||
          !entry.contains("dtype") || entry["dtype"] != safetensors_dtype(spec.dtype))
        throw util::DataError(index_file.string() + ": " + where + " is " + entry.value("shape", ordered_json()).dump() +
                                  " " + entry.value("dtype", ordered_json()).dump() + ", the model has " +
                                  ordered_json(spec.shape).dump() + " " + safetensors_dtype(spec.dtype),
                              "resume with the policy config the checkpoint was written with");
      const int64_t saved_rpr = integer(entry, "rows_per_rank", index_file, where);
      if (saved_rpr != (spec.rows + saved_shards - 1) / saved_shards)
        throw util::DataError(index_file.string() + ": " + where + " has rows_per_rank " + std::to_string(saved_rpr) +
                                  ", which does not fit " + std::to_string(spec.rows) + " rows over " +
                                  std::to_string(saved_shards) + " shards",
                              hint);
      // Optimizer keys come from shard 0, which always holds row 0 of every parameter.
      std::map<std::string, torch::Tensor> state;
      const std::string optim_prefix = "optim/" + spec.name + "/";
      for (const auto& [name, tensor] : file(0).tensors) {
        if (name.rfind(optim_prefix, 0) != 0) continue;
        std::string key = name.substr(optim_prefix.size());
        state[key] = key == "step" ? tensor.clone() : torch::zeros({spec.rows_per_rank, spec.row_numel}, tensor.options());
      }
      auto rows = torch::zeros({spec.rows_per_rank, spec.row_numel}, torch::TensorOptions().dtype(spec.dtype));
      auto [begin, end] = spec.row_range(view.shard_rank);
      for (int64_t r = 0; r < saved_shards && begin < end; ++r) {
        const int64_t saved_begin = std::min(spec.rows, r * saved_rpr), saved_end = std::min(spec.rows, (r + 1) * saved_rpr);
        const int64_t lo = std::max(begin, saved_begin), hi = std::min(end, saved_end);
        if (lo >= hi) continue;
        const auto& content = file(r);
        auto copy_rows = [&](const std::string& name, torch::Tensor& into) {
          const auto* found = content.find(name);
          if (found == nullptr)
            throw util::DataError(shard_file(r) + ": has no tensor '" + name + "'", hint);
          if (found->numel() != saved_rpr * spec.row_numel)
            throw util::DataError(shard_file(r) + ": '" + name + "' has " + std::to_string(found->numel()) +
                                      " elements, the index says " + std::to_string(saved_rpr * spec.row_numel),
                                  hint);
          into.narrow(0, lo - begin, hi - lo)
              .copy_(found->reshape({saved_rpr, spec.row_numel}).narrow(0, lo - saved_begin, hi - lo));
        };
        copy_rows("param/" + spec.name, rows);
        for (auto& [key, tensor] : state)
          if (key != "step") copy_rows(optim_prefix + key, tensor);
      }
      auto shard = fsdp.local_shard(spec.name);
      shard.detach().copy_(rows.reshape(spec.shard_shape()));
      if (optimizer == nullptr || state.empty()) continue;
      if (optimizer->kind() != "sgd" && (!state.count("step") || !state.count("exp_avg") || !state.count("exp_avg_sq")))
        throw util::DataError(shard_file(0) + ": " + where + " needs optim step, exp_avg and exp_avg_sq for a " +
                                  optimizer->kind() + " optimizer",
                              hint);
      for (auto& [key, tensor] : state)
        if (key != "step") tensor = tensor.reshape(spec.shard_shape());
      optim::set_param_state(*optimizer, shard, state);
    }
  }
}

}  // namespace lrhost::ckpt
