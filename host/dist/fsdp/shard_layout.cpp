// Shard arithmetic of FSDP: row blocks on dim 0, padding, flat-shard offsets.
#include "host/dist/fsdp/shard_layout.hpp"

#include "host/util/error.hpp"

namespace lrhost::dist::fsdp {

std::vector<int64_t> ParamShardSpec::shard_shape() const {
  if (shape.empty()) return {rows_per_rank};
  std::vector<int64_t> result = shape;
  result[0] = rows_per_rank;
  return result;
}

std::pair<int64_t, int64_t> ParamShardSpec::row_range(int rank) const {
  int64_t begin = std::min<int64_t>(rows, rank * rows_per_rank);
  int64_t end = std::min<int64_t>(rows, (rank + 1) * rows_per_rank);
  return {begin, end};
}

int64_t UnitLayout::numel() const {
  int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  return total;
}

int64_t UnitLayout::shard_numel() const {
  int64_t total = 0;
  for (const auto& p : params) total += p.shard_numel();
  return total;
}

std::vector<int64_t> UnitLayout::shard_offsets() const {
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (const auto& p : params) {
    offsets.push_back(offset);
    offset += p.shard_numel();
  }
  return offsets;
}

ParamShardSpec make_param_spec(const std::string& name, const torch::Tensor& param, int shard_size) {
  if (shard_size < 1) throw util::ConfigError("FSDP shard group size must be >= 1, got " + std::to_string(shard_size));
  ParamShardSpec spec;
  spec.name = name;
  spec.shape = param.sizes().vec();
  spec.dtype = param.scalar_type();
  spec.rows = param.dim() == 0 ? 1 : param.size(0);
  spec.row_numel = param.dim() == 0 ? 1 : (spec.rows == 0 ? 0 : param.numel() / spec.rows);
  spec.rows_per_rank = (spec.rows + shard_size - 1) / shard_size;
  return spec;
}

UnitLayout make_unit_layout(const std::string& name, const std::string& module_type,
                            const std::vector<std::pair<std::string, torch::Tensor>>& params, int shard_size,
                            bool frozen) {
  UnitLayout layout{name, module_type, shard_size, {}, frozen};
  for (const auto& [param_name, param] : params)
    layout.params.push_back(make_param_spec(param_name, param, shard_size));
  return layout;
}

torch::Tensor shard_of(const ParamShardSpec& spec, const torch::Tensor& full, int rank) {
  auto rows = full.reshape({spec.rows, spec.row_numel});
  auto [begin, end] = spec.row_range(rank);
  auto shard = torch::zeros({spec.rows_per_rank, spec.row_numel}, full.options());
  if (end > begin) shard.narrow(0, 0, end - begin).copy_(rows.narrow(0, begin, end - begin));
  return shard.reshape(spec.shard_shape());
}

torch::Tensor unshard(const ParamShardSpec& spec, const std::vector<torch::Tensor>& shards) {
  std::vector<torch::Tensor> rows;
  for (const auto& shard : shards) rows.push_back(shard.reshape({spec.rows_per_rank, spec.row_numel}));
  return torch::cat(rows).narrow(0, 0, spec.rows).reshape(spec.shape);
}

}  // namespace lrhost::dist::fsdp
