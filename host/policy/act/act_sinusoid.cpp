// Sinusoidal position embeddings, with LeRobot's arithmetic (dtypes and operation order) so the
// values match bit for bit where it matters (the 2-D one is recomputed every forward).
#include "host/policy/act/act_sinusoid.hpp"

#include <cmath>
#include <numbers>
#include <vector>

namespace lrhost::policy::act {

torch::Tensor sinusoidal_pos_embedding_1d(int64_t num_positions, int64_t dimension) {
  // LeRobot computes this table with numpy in float64.
  std::vector<double> table(static_cast<size_t>(num_positions * dimension));
  for (int64_t position = 0; position < num_positions; ++position) {
    for (int64_t j = 0; j < dimension; ++j) {
      double angle = static_cast<double>(position) /
                     std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / static_cast<double>(dimension));
      table[static_cast<size_t>(position * dimension + j)] = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  }
  return torch::from_blob(table.data(), {num_positions, dimension}, torch::kFloat64).to(torch::kFloat32);
}

torch::Tensor sinusoidal_pos_embedding_2d(const torch::Tensor& feature_map, int64_t dimension) {
  const double two_pi = 2 * std::numbers::pi;
  const double eps = 1e-6;
  auto float_options = torch::TensorOptions().dtype(torch::kFloat32).device(feature_map.device());
  auto not_mask = torch::ones({1, feature_map.size(2), feature_map.size(3)}, float_options);
  auto y_range = not_mask.cumsum(1, torch::kFloat32);  // 1..H down the rows
  auto x_range = not_mask.cumsum(2, torch::kFloat32);  // 1..W along the columns
  using torch::indexing::Slice;
  y_range = y_range / (y_range.index({Slice(), Slice(-1), Slice()}) + eps) * two_pi;
  x_range = x_range / (x_range.index({Slice(), Slice(), Slice(-1)}) + eps) * two_pi;

  auto inverse_frequency =
      torch::pow(10000, 2 * torch::floor_divide(torch::arange(dimension, float_options), 2) / dimension);
  x_range = x_range.unsqueeze(-1) / inverse_frequency;  // (1, H, W, dimension)
  y_range = y_range.unsqueeze(-1) / inverse_frequency;

  // Stacking then flattening interleaves sin (even channels) and cos (odd channels).
  auto interleave = [](const torch::Tensor& r) {
    auto even = r.index({"...", Slice(0, torch::indexing::None, 2)}).sin();
    auto odd = r.index({"...", Slice(1, torch::indexing::None, 2)}).cos();
    return torch::stack({even, odd}, -1).flatten(3);
  };
  return torch::cat({interleave(y_range), interleave(x_range)}, 3).permute({0, 3, 1, 2});
}

}  // namespace lrhost::policy::act
