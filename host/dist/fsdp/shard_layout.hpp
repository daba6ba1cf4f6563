// How FSDP lays parameters out across a shard group, as plain arithmetic shared by the sharding
// engine, sharded checkpoints and the `lrhost show` plan. Every parameter is split on dim 0 into
// `shard_size` equal row blocks after padding dim 0 up to a multiple of the group size (a 0-d
// parameter counts as one row); rank r holds rows [r * rows_per_rank, (r + 1) * rows_per_rank) of
// the padded parameter. A unit's flat shard is the concatenation of its parameters' shards in
// order, so one all-gather of equal-sized flat shards yields every rank's rows of every parameter.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::dist::fsdp {

struct ParamShardSpec {
  std::string name;            // dotted state_dict key
  std::vector<int64_t> shape;  // global (unsharded) shape
  c10::ScalarType dtype = c10::ScalarType::Float;
  int64_t rows = 1;           // shape[0], or 1 for a 0-d parameter
  int64_t row_numel = 1;      // elements per row
  int64_t rows_per_rank = 1;  // ceil(rows / shard_size)

  int64_t numel() const { return rows * row_numel; }
  int64_t shard_numel() const { return rows_per_rank * row_numel; }
  // The shape of one rank's (padded) shard: [rows_per_rank, shape[1:]...]; [1] for a 0-d parameter.
  std::vector<int64_t> shard_shape() const;
  // Unpadded rows [begin, end) of the global parameter that `rank` holds; empty when it holds only padding.
  std::pair<int64_t, int64_t> row_range(int rank) const;
};

// One parameter group of a wrap unit (wrap_units.hpp: trainable or frozen, one dtype); a unit with
// both, or with several dtypes, has one layout per group under the same name.
struct UnitLayout {
  std::string name;         // module path of the wrap unit ("model.encoder.layers.0"), or "root"
  std::string module_type;  // e.g. "ACTEncoderLayer"; "root" for the root unit
  int shard_size = 1;
  std::vector<ParamShardSpec> params;  // of one dtype
  bool frozen = false;                 // no gradients, reduction or optimizer state (requires_grad = false)

  int64_t numel() const;        // unpadded elements of all parameters
  int64_t shard_numel() const;  // elements of one rank's flat shard
  // Offset of each parameter's shard inside a rank's flat shard.
  std::vector<int64_t> shard_offsets() const;
};

ParamShardSpec make_param_spec(const std::string& name, const torch::Tensor& param, int shard_size);
UnitLayout make_unit_layout(const std::string& name, const std::string& module_type,
                            const std::vector<std::pair<std::string, torch::Tensor>>& params, int shard_size,
                            bool frozen = false);

// Rank `rank`'s padded shard of a full parameter (a copy, zero in padding rows), shaped shard_shape().
torch::Tensor shard_of(const ParamShardSpec& spec, const torch::Tensor& full, int rank);
// The full parameter from the shards of all ranks in rank order (padding dropped), shaped spec.shape.
torch::Tensor unshard(const ParamShardSpec& spec, const std::vector<torch::Tensor>& shards);

}  // namespace lrhost::dist::fsdp
