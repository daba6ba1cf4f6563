// Computation, aggregation and (de)serialization of LeRobot dataset statistics. The arithmetic is
// written as explicit loops over float or double rather than torch reductions because LeRobot's
// numbers come from numpy, whose summation order (pairwise along a single contiguous column,
// row-by-row accumulation when several columns are reduced together), float32-vs-float64 promotion
// and histogram quantile estimate differ from torch's; matching them is what makes a stats.json
// written here equal to LeRobot's for the same data. Matched: LeRobot 0.6.1
// (src/lerobot/datasets/compute_stats.py: RunningQuantileStats, get_feature_stats,
// compute_episode_stats, aggregate_feature_stats; datasets/io_utils.py: load_stats, write_stats)
// under numpy 2.x (NEP 50 scalar promotion).
#include "host/data/stats/feature_stats.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "host/util/error.hpp"

namespace lrhost::data {
namespace {

using nlohmann::json;
using util::DataError;
using util::IoError;

constexpr int64_t kNumQuantileBins = 5000;  // RunningQuantileStats' default histogram resolution

bool is_quantile_name(const std::string& name) {
  return name.size() >= 2 && name[0] == 'q' &&
         std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// numpy's pairwise_sum (used when a reduction runs along one contiguous column): blocks of up to
// 128 summed with eight interleaved accumulators, larger ranges split in halves at a multiple of 8.
template <class T>
T pairwise_sum(const T* a, int64_t n, int64_t stride) {
  if (n < 8) {
    T res = T(0);
    for (int64_t i = 0; i < n; ++i) res += a[i * stride];
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j * stride];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[(i + j) * stride];
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i * stride];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2, stride) + pairwise_sum(a + n2 * stride, n - n2, stride);
}

// np.sum(x, axis=0) of a C-contiguous [rows, cols] array, in numpy's order: pairwise when there is a
// single column, otherwise each output accumulates the rows one after another.
template <class T>
std::vector<T> numpy_sum_axis0(const T* x, int64_t rows, int64_t cols) {
  std::vector<T> out(static_cast<size_t>(cols), T(0));
  if (cols == 1) {
    out[0] = T(0) + pairwise_sum(x, rows, 1);
    return out;
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[j] += x[i * cols + j];
  return out;
}

// np.linspace(start, stop, n + 1) evaluated in T, step by step as numpy 2 does.
template <class T>
std::vector<T> numpy_linspace(T start, T stop, int64_t div) {
  std::vector<T> y(static_cast<size_t>(div + 1));
  T delta = stop - start;
  T step = delta / static_cast<T>(div);
  for (int64_t k = 0; k <= div; ++k) {
    T v = static_cast<T>(k);
    if (step == T(0)) {
      v = v / static_cast<T>(div);
      v = v * delta;
    } else {
      v = v * step;
    }
    y[k] = v + start;
  }
  y[div] = stop;
  return y;
}

// Quantiles of one column from RunningQuantileStats' histogram. Returns the values (as double) and,
// per quantile, whether it is a bare bin edge (a T scalar in numpy) rather than an interpolation
// (a float64 scalar); numpy's array of a quantile across columns is T only if all are bare edges.
template <class T>
std::pair<std::vector<double>, std::vector<bool>> histogram_quantiles(std::vector<T> column, T col_min, T col_max,
                                                                      const std::vector<double>& qs) {
  const T pad = static_cast<T>(1e-10);
  const T start = col_min - pad;
  const T stop = col_max + pad;
  std::vector<T> edges = numpy_linspace<T>(start, stop, kNumQuantileBins);
  // np.histogram with explicit edges: counts from searchsorted on the sorted data, last bin closed.
  std::sort(column.begin(), column.end());
  std::vector<double> cumsum(static_cast<size_t>(kNumQuantileBins));
  auto below = [&](int64_t k) {
    return static_cast<double>(std::lower_bound(column.begin(), column.end(), edges[k]) - column.begin());
  };
  const double first = below(0);
  const double last =
      static_cast<double>(std::upper_bound(column.begin(), column.end(), edges[kNumQuantileBins]) - column.begin());
  for (int64_t k = 0; k < kNumQuantileBins; ++k) {
    double upper = (k + 1 < kNumQuantileBins) ? below(k + 1) : last;
    cumsum[k] = upper - first;
  }
  const double count = static_cast<double>(column.size());
  std::vector<double> out;
  std::vector<bool> is_edge;
  for (double q : qs) {
    is_edge.push_back(true);
    const double target = q * count;
    auto it = std::lower_bound(cumsum.begin(), cumsum.end(), target);
    int64_t idx = it - cumsum.begin();
    if (idx == 0) {
      out.push_back(static_cast<double>(edges[0]));
      continue;
    }
    if (idx >= kNumQuantileBins) {
      out.push_back(static_cast<double>(edges[kNumQuantileBins]));
      continue;
    }
    const double before = cumsum[idx - 1];
    const double in_bin = cumsum[idx] - before;
    if (in_bin == 0) {
      out.push_back(static_cast<double>(edges[idx]));
      continue;
    }
    const double fraction = (target - before) / in_bin;
    const T width = edges[idx + 1] - edges[idx];  // float32 subtraction when T is float, as numpy
    out.push_back(static_cast<double>(edges[idx]) + fraction * static_cast<double>(width));
    is_edge.back() = false;
  }
  return {out, is_edge};
}

template <class T>
constexpr torch::ScalarType torch_type() {
  return std::is_same_v<T, float> ? torch::kFloat32 : torch::kFloat64;
}

template <class T>
torch::Tensor vector_tensor(const std::vector<T>& v) {
  return torch::from_blob(const_cast<T*>(v.data()), {static_cast<int64_t>(v.size())}, torch_type<T>()).clone();
}

// RunningQuantileStats.update + get_statistics on a [rows, cols] array already promoted to T.
template <class T>
FeatureStats running_quantile_stats(const torch::Tensor& data2d) {
  const int64_t rows = data2d.size(0), cols = data2d.size(1);
  const T* x = data2d.data_ptr<T>();
  std::vector<T> squares(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) squares[i] = x[i] * x[i];
  std::vector<T> sum = numpy_sum_axis0(x, rows, cols);
  std::vector<T> sum_sq = numpy_sum_axis0(squares.data(), rows, cols);
  std::vector<T> mean(cols), stddev(cols), mn(cols), mx(cols);
  for (int64_t j = 0; j < cols; ++j) {
    // np.mean divides the T sum by an intp count, i.e. in float64, then stores back into T.
    mean[j] = static_cast<T>(static_cast<double>(sum[j]) / static_cast<double>(rows));
    const T mean_sq = static_cast<T>(static_cast<double>(sum_sq[j]) / static_cast<double>(rows));
    const T variance = mean_sq - mean[j] * mean[j];
    stddev[j] = std::sqrt(std::max(T(0), variance));
    mn[j] = x[j];
    mx[j] = x[j];
    for (int64_t i = 1; i < rows; ++i) {
      mn[j] = std::min(mn[j], x[i * cols + j]);
      mx[j] = std::max(mx[j], x[i * cols + j]);
    }
  }
  const auto& qs = default_quantiles();
  std::vector<std::vector<double>> qvalues(qs.size(), std::vector<double>(cols));
  std::vector<bool> all_edges(qs.size(), true);
  std::vector<T> column(static_cast<size_t>(rows));
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) column[i] = x[i * cols + j];
    auto [values, edges_only] = histogram_quantiles<T>(column, mn[j], mx[j], qs);
    for (size_t k = 0; k < qs.size(); ++k) {
      qvalues[k][j] = values[k];
      all_edges[k] = all_edges[k] && edges_only[k];
    }
  }
  FeatureStats stats;
  stats.min = vector_tensor(mn);
  stats.max = vector_tensor(mx);
  stats.mean = vector_tensor(mean);
  stats.std = vector_tensor(stddev);
  // np.array(list of scalars) is float64 unless every entry was a T bin edge.
  for (size_t k = 0; k < qs.size(); ++k)
    stats.quantiles[quantile_name(qs[k])] =
        vector_tensor(qvalues[k]).to(all_edges[k] ? torch_type<T>() : torch::kFloat64);
  return stats;
}

// _compute_basic_stats for a single row: numpy's reductions of one value give the value itself.
FeatureStats single_row_stats(const torch::Tensor& row2d) {
  const bool integral = !torch::isFloatingType(row2d.scalar_type());
  torch::Tensor row = row2d.reshape({-1});
  FeatureStats stats;
  // np.min keeps the input dtype; np.mean and np.std of integers are float64.
  stats.min = integral ? row.to(torch::kInt64) : row.clone();
  stats.max = stats.min.clone();
  stats.mean = integral ? row.to(torch::kFloat64) : row.clone();
  stats.std = torch::zeros_like(stats.mean);
  for (double q : default_quantiles()) stats.quantiles[quantile_name(q)] = stats.mean.clone();
  return stats;
}

// numpy's result_type(x.dtype, float32) as LeRobot applies it before computing squares.
bool promotes_to_double(torch::ScalarType t) {
  return t == torch::kFloat64 || t == torch::kInt32 || t == torch::kInt64;
}

// get_feature_stats on a [rows, cols] array; `count` is the sample count LeRobot records.
FeatureStats feature_stats_2d(const torch::Tensor& data2d, int64_t count) {
  const int64_t rows = data2d.size(0);
  if (rows == 0) throw DataError("cannot compute statistics of an empty feature (0 values)");
  FeatureStats stats;
  if (rows < 2) {
    stats = single_row_stats(data2d.contiguous());
  } else if (promotes_to_double(data2d.scalar_type())) {
    stats = running_quantile_stats<double>(data2d.to(torch::kFloat64).contiguous());
  } else {
    stats = running_quantile_stats<float>(data2d.to(torch::kFloat32).contiguous());
  }
  stats.count = torch::tensor({count}, torch::kInt64);
  return stats;
}

template <class F>
void for_each_stat(FeatureStats& stats, F&& f) {
  for (torch::Tensor* t : {&stats.min, &stats.max, &stats.mean, &stats.std})
    if (t->defined()) f(*t);
  for (auto& [name, t] : stats.quantiles) f(t);
  for (auto& [name, t] : stats.extra) f(t);
}

// get_feature_stats(axis=(0,2,3)) of frames [N,C,H,W]: every pixel of a channel is one sample, the
// recorded count is N. Stats come back flat ([C]).
FeatureStats channel_stats_flat(const torch::Tensor& frames) {
  const int64_t samples = frames.size(0), channels = frames.size(1);
  torch::Tensor data2d = frames.permute({0, 2, 3, 1}).reshape({-1, channels}).contiguous();
  return feature_stats_2d(data2d, samples);
}

// numpy's dtype when stacking arrays of these dtypes (float64 wins; ints mixed with floats → float64).
torch::ScalarType stacked_type(const std::vector<torch::Tensor>& ts) {
  torch::ScalarType t = ts.front().scalar_type();
  for (const auto& x : ts)
    if (x.scalar_type() != t) return torch::kFloat64;
  return t;
}

void check_aggregatable(const std::vector<FeatureStats>& per_episode) {
  const auto& first = per_episode.front();
  for (size_t e = 0; e < per_episode.size(); ++e) {
    const FeatureStats& s = per_episode[e];
    for (const char* name : {"min", "max", "mean", "std", "count"}) {
      const torch::Tensor& t = s.get(name);
      if (t.dim() == 0)
        throw DataError("episode stats #" + std::to_string(e) + ": stat '" + name + "' must have at least 1 dimension");
      if (std::string(name) == "count" && t.sizes() != torch::IntArrayRef{1})
        throw DataError("episode stats #" + std::to_string(e) + ": stat 'count' must have shape [1], got " +
                        c10::str(t.sizes()));
      if (t.sizes() != first.get(name).sizes())
        throw DataError("episode stats #" + std::to_string(e) + ": stat '" + name + "' has shape " +
                        c10::str(t.sizes()) + " but episode #0 has " + c10::str(first.get(name).sizes()));
    }
  }
}

// A JSON number or nested list → tensor (np.atleast_1d(np.array(value)) semantics). The shape is read
// along the first elements, then every branch must agree with it (numpy rejects ragged lists).
void check_json_branch(const json& v, size_t depth, const std::vector<int64_t>& shape, std::vector<double>& values,
                       bool& all_integers, const std::string& where) {
  if (depth < shape.size()) {
    if (!v.is_array() || static_cast<int64_t>(v.size()) != shape[depth])
      throw DataError(where + " is a ragged nested list (rows of different lengths or depths)");
    for (const json& e : v) check_json_branch(e, depth + 1, shape, values, all_integers, where);
    return;
  }
  if (v.is_array()) throw DataError(where + " is a ragged nested list (rows of different lengths or depths)");
  if (v.is_object())
    throw DataError(where + " contains an object; expected numbers or nested lists of numbers (wrong nesting)");
  if (!v.is_number())
    throw DataError(where + " must hold numbers or nested lists of numbers, found " + std::string(v.type_name()));
  if (v.is_number_float()) all_integers = false;
  values.push_back(v.get<double>());
}

torch::Tensor tensor_from_json(const json& v, const std::string& where) {
  if (v.is_object())
    throw DataError(where + " is an object; expected a number or a nested list of numbers (wrong nesting)");
  std::vector<int64_t> shape;
  for (const json* cur = &v; cur->is_array(); cur = &cur->front()) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
  }
  std::vector<double> values;
  bool all_integers = true;
  check_json_branch(v, 0, shape, values, all_integers, where);
  if (shape.empty()) shape.push_back(1);     // np.atleast_1d
  if (values.empty()) all_integers = false;  // np.array([]) is float64
  torch::Tensor t = vector_tensor(values).reshape(shape);
  return all_integers ? t.to(torch::kInt64) : t;
}

// Nested lists like ndarray.tolist(): float32 values widen exactly to double, integers stay integers.
template <class Json>
Json tensor_to_json(const torch::Tensor& t) {
  torch::Tensor c = t.detach().cpu().contiguous();
  const bool integral = !torch::isFloatingType(c.scalar_type());
  if (c.dim() == 0) return integral ? Json(c.item<int64_t>()) : Json(c.item<double>());
  Json arr = Json::array();
  for (int64_t i = 0; i < c.size(0); ++i) arr.push_back(tensor_to_json<Json>(c[i]));
  return arr;
}

// t / factor element by element in t's own dtype, as numpy divides an array by a Python float.
torch::Tensor divide_in_own_dtype(const torch::Tensor& t, double factor) {
  if (t.scalar_type() == torch::kFloat32) {
    torch::Tensor out = t.contiguous().clone();
    float* p = out.data_ptr<float>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = p[i] / static_cast<float>(factor);
    return out;
  }
  torch::Tensor out = t.to(torch::kFloat64).contiguous().clone();
  double* p = out.data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = p[i] / factor;
  return out;
}

std::vector<double> as_doubles(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Python's repr(float), which json.dump uses: the shortest digits that read back to the same double
// (std::to_chars gives the same shortest-and-closest digits), fixed notation when the decimal
// exponent is in [-4, 16), else d.ddde±XX; integral values keep a ".0". Non-finite values are
// written as json.dump writes them (NaN, Infinity), which is not strict JSON but is what LeRobot reads.
std::string python_float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exp10 = std::stoi(sci.substr(e_pos + 1));
  std::string sign;
  if (!mantissa.empty() && mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  const int decpt = exp10 + 1;  // value = 0.d1d2... * 10^decpt
  const int nd = static_cast<int>(digits.size());
  std::string body;
  if (decpt <= -4 || decpt > 16) {
    body = digits.substr(0, 1);
    if (nd > 1) body += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof(e), "e%+03d", exp10);
    body += e;
  } else if (decpt <= 0) {
    body = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (decpt >= nd) {
    body = digits + std::string(static_cast<size_t>(decpt - nd), '0') + ".0";
  } else {
    body = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
  }
  return sign + body;
}

// json.dump(indent=4, ensure_ascii=False) layout: one element per line, ": " after keys.
void dump_python_style(const nlohmann::ordered_json& v, int level, std::string& out) {
  const std::string pad(static_cast<size_t>(4 * (level + 1)), ' ');
  const std::string close_pad(static_cast<size_t>(4 * level), ' ');
  if (v.is_object() || v.is_array()) {
    if (v.empty()) {
      out += v.is_object() ? "{}" : "[]";
      return;
    }
    out += v.is_object() ? "{\n" : "[\n";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ",\n";
      first = false;
      out += pad;
      if (v.is_object()) out += nlohmann::ordered_json(it.key()).dump(-1, ' ', false) + ": ";
      dump_python_style(*it, level + 1, out);
    }
    out += "\n" + close_pad + (v.is_object() ? "}" : "]");
  } else if (v.is_number_float()) {
    out += python_float_repr(v.get<double>());
  } else {
    out += v.dump(-1, ' ', false);
  }
}

}  // namespace

std::string quantile_name(double q) {
  auto pct = static_cast<int64_t>(q * 100.0);
  std::string digits = std::to_string(pct);
  return digits.size() < 2 ? "q0" + digits : "q" + digits;
}

bool FeatureStats::has(const std::string& stat) const {
  if (stat == "min") return min.defined();
  if (stat == "max") return max.defined();
  if (stat == "mean") return mean.defined();
  if (stat == "std") return std.defined();
  if (stat == "count") return count.defined();
  return quantiles.count(stat) > 0 || extra.count(stat) > 0;
}

const torch::Tensor& FeatureStats::get(const std::string& stat) const {
  if (has(stat)) {
    if (stat == "min") return min;
    if (stat == "max") return max;
    if (stat == "mean") return mean;
    if (stat == "std") return std;
    if (stat == "count") return count;
    auto it = quantiles.find(stat);
    return it != quantiles.end() ? it->second : extra.at(stat);
  }
  std::string present;
  for (const auto& n : names()) present += (present.empty() ? "" : ", ") + n;
  throw DataError("stat '" + stat + "' is missing (present: " + (present.empty() ? "none" : present) + ")",
                  "recompute the dataset statistics, or pick a normalization mode whose stats are present");
}

std::vector<std::string> FeatureStats::names() const {
  std::vector<std::string> out;
  for (const char* n : {"min", "max", "mean", "std", "count"})
    if (has(n)) out.emplace_back(n);
  for (const auto& [n, t] : quantiles) out.push_back(n);
  for (const auto& [n, t] : extra) out.push_back(n);
  return out;
}

void FeatureStats::set(const std::string& stat, torch::Tensor value) {
  if (stat == "min")
    min = std::move(value);
  else if (stat == "max")
    max = std::move(value);
  else if (stat == "mean")
    mean = std::move(value);
  else if (stat == "std")
    std = std::move(value);
  else if (stat == "count")
    count = std::move(value);
  else if (is_quantile_name(stat))
    quantiles[stat] = std::move(value);
  else
    extra[stat] = std::move(value);
}

int64_t estimate_num_samples(int64_t dataset_len, int64_t min_num_samples, int64_t max_num_samples, double power) {
  if (dataset_len < min_num_samples) min_num_samples = dataset_len;
  const auto grown = static_cast<int64_t>(std::pow(static_cast<double>(dataset_len), power));
  return std::max(min_num_samples, std::min(grown, max_num_samples));
}

std::vector<int64_t> sample_indices(int64_t data_len) {
  const int64_t num = estimate_num_samples(data_len);
  // np.round(np.linspace(0, data_len - 1, num)): float64 steps, round half to even.
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num));
  const double delta = static_cast<double>(data_len - 1);
  const int64_t div = num - 1;
  const double step = div > 0 ? delta / static_cast<double>(div) : 0.0;
  for (int64_t k = 0; k < num; ++k) {
    double v;
    if (div <= 0)
      v = static_cast<double>(k) * delta;
    else if (step == 0.0)
      v = static_cast<double>(k) / static_cast<double>(div) * delta;
    else
      v = static_cast<double>(k) * step;
    if (k == num - 1 && num > 1) v = delta;
    out.push_back(static_cast<int64_t>(std::nearbyint(v)));
  }
  return out;
}

FeatureStats compute_episode_stats(const torch::Tensor& values, bool is_camera, bool is_depth_map) {
  torch::Tensor v = values.detach().cpu();
  if (!is_camera) {
    if (v.dim() == 0) throw DataError("feature values must have a leading frame axis, got a scalar");
    const int64_t n = v.size(0);
    // LeRobot reduces over every axis but the last ([N] is treated as [N, 1]).
    torch::Tensor data2d = v.dim() == 1 ? v.reshape({-1, 1}) : v.reshape({-1, v.size(-1)});
    return feature_stats_2d(data2d, n);
  }
  if (v.dim() != 4) throw DataError("camera frames must be [N, C, H, W], got shape " + c10::str(v.sizes()));
  if (v.size(0) == 0) throw DataError("cannot compute camera statistics of an episode without frames");
  std::vector<int64_t> idx = sample_indices(v.size(0));
  torch::Tensor frames = v.index_select(0, torch::tensor(idx, torch::kInt64));
  const int64_t h = frames.size(2), w = frames.size(3);
  if (std::max(w, h) >= 300) {  // auto_downsample_height_width(target_size=150, max_size_threshold=300)
    const int64_t factor = w > h ? w / 150 : h / 150;
    using torch::indexing::Slice;
    frames = frames.index({Slice(), Slice(), Slice(torch::indexing::None, torch::indexing::None, factor),
                           Slice(torch::indexing::None, torch::indexing::None, factor)});
  }
  const int64_t channels = frames.size(1);
  FeatureStats stats = channel_stats_flat(frames);
  const double factor = is_depth_map ? 1.0 : 255.0;
  for_each_stat(stats, [&](torch::Tensor& t) {
    // v / 255.0 rounds in the stat's own dtype (numpy keeps float32 arrays float32).
    t = divide_in_own_dtype(t, factor).reshape({channels, 1, 1});
  });
  return stats;
}

FeatureStats compute_channel_stats(const torch::Tensor& frames) {
  torch::Tensor v = frames.detach().cpu();
  if (v.dim() != 4) throw DataError("camera frames must be [N, C, H, W], got shape " + c10::str(v.sizes()));
  if (v.size(0) == 0) throw DataError("cannot compute camera statistics of an episode without frames");
  const int64_t channels = v.size(1);
  FeatureStats stats = channel_stats_flat(v);
  for_each_stat(stats, [&](torch::Tensor& t) { t = t.reshape({channels, 1, 1}); });
  return stats;
}

FeatureStats aggregate_stats(const std::vector<FeatureStats>& per_episode) {
  if (per_episode.empty()) throw DataError("cannot aggregate statistics of zero episodes");
  check_aggregatable(per_episode);
  auto collect = [&](const std::string& name) {
    std::vector<torch::Tensor> ts;
    for (const auto& s : per_episode) ts.push_back(s.get(name));
    return ts;
  };
  const auto mins = collect("min"), maxs = collect("max"), means = collect("mean"), stds = collect("std"),
             counts = collect("count");
  // numpy promotes the stacked means and the counts to float64 before weighting; std ** 2 rounds in
  // the std's own dtype first. Plain loops keep every division a true IEEE division.
  const int64_t k = static_cast<int64_t>(per_episode.size());
  const int64_t n = means.front().numel();
  std::vector<double> mean_d, var_d, count_d;
  for (int64_t e = 0; e < k; ++e) {
    auto m = as_doubles(means[e]);
    auto v = as_doubles(stds[e] * stds[e]);
    mean_d.insert(mean_d.end(), m.begin(), m.end());
    var_d.insert(var_d.end(), v.begin(), v.end());
    count_d.push_back(static_cast<double>(counts[e].to(torch::kInt64).item<int64_t>()));
  }
  int64_t total = 0;
  for (const auto& c : counts) total += c.to(torch::kInt64).item<int64_t>();
  std::vector<double> weighted(static_cast<size_t>(k * n));
  for (int64_t e = 0; e < k; ++e)
    for (int64_t j = 0; j < n; ++j) weighted[e * n + j] = mean_d[e * n + j] * count_d[e];
  std::vector<double> total_mean = numpy_sum_axis0(weighted.data(), k, n);
  for (double& m : total_mean) m = m / static_cast<double>(total);
  for (int64_t e = 0; e < k; ++e)
    for (int64_t j = 0; j < n; ++j) {
      const double delta = mean_d[e * n + j] - total_mean[j];
      weighted[e * n + j] = (var_d[e * n + j] + delta * delta) * count_d[e];
    }
  std::vector<double> total_std = numpy_sum_axis0(weighted.data(), k, n);
  for (double& v : total_std) v = std::sqrt(v / static_cast<double>(total));

  FeatureStats out;
  out.min = torch::stack(mins).to(stacked_type(mins)).amin(0);
  out.max = torch::stack(maxs).to(stacked_type(maxs)).amax(0);
  out.mean = vector_tensor(total_mean).reshape(means.front().sizes());
  out.std = vector_tensor(total_std).reshape(means.front().sizes());
  out.count = torch::tensor({total}, torch::kInt64);
  // Quantile names come from the first episode and must be present in all (others are dropped).
  // Exact global quantiles cannot be recovered from per-episode histograms; LeRobot 0.6.1 takes the
  // count-weighted mean of the episodes' estimates, in float64 like the weighted mean above.
  for (const auto& [name, first] : per_episode.front().quantiles) {
    std::vector<torch::Tensor> qs;
    for (const auto& s : per_episode) {
      auto it = s.quantiles.find(name);
      if (it == s.quantiles.end()) break;
      qs.push_back(it->second);
    }
    if (qs.size() != per_episode.size()) continue;
    for (const auto& q : qs)
      if (q.sizes() != first.sizes())
        throw DataError("stat '" + name + "' has shape " + c10::str(q.sizes()) + " in one episode and " +
                        c10::str(first.sizes()) + " in episode #0");
    const int64_t qn = first.numel();
    std::vector<double> weighted_q(static_cast<size_t>(k * qn));
    for (int64_t e = 0; e < k; ++e) {
      const auto values = as_doubles(qs[static_cast<size_t>(e)]);
      for (int64_t j = 0; j < qn; ++j) weighted_q[e * qn + j] = values[j] * count_d[e];
    }
    std::vector<double> total_q = numpy_sum_axis0(weighted_q.data(), k, qn);
    for (double& q : total_q) q = q / static_cast<double>(total);
    out.quantiles[name] = vector_tensor(total_q).reshape(first.sizes());
  }
  return out;
}

FeatureStats aggregate_stats_sequential(const std::vector<FeatureStats>& per_episode) {
  if (per_episode.empty()) throw DataError("cannot aggregate statistics of zero episodes");
  FeatureStats running = per_episode.front();
  for (size_t e = 1; e < per_episode.size(); ++e) running = aggregate_stats({running, per_episode[e]});
  return running;
}

json stats_to_json(const FeatureStats& stats) {
  json out = json::object();
  for (const auto& name : stats.names()) out[name] = tensor_to_json<json>(stats.get(name));
  return out;
}

FeatureStats stats_from_json(const json& value, const std::string& what) {
  if (!value.is_object())
    throw DataError(what + ": expected an object of stat name → values, found " + std::string(value.type_name()));
  FeatureStats stats;
  for (const auto& [name, v] : value.items()) stats.set(name, tensor_from_json(v, what + " stat '" + name + "'"));
  return stats;
}

DatasetStats read_stats_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw IoError("cannot open stats file " + file.string(), "check that the dataset's meta/ folder is complete");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double
    throw IoError("stats file " + file.string() + " is not valid JSON: " + e.what());
  }
  if (!doc.is_object())
    throw DataError("stats file " + file.string() + ": expected an object of feature → stats, found " +
                    std::string(doc.type_name()));
  DatasetStats stats;
  for (const auto& [key, value] : doc.items())
    stats[key] = stats_from_json(value, "stats file " + file.string() + " feature '" + key + "'");
  return stats;
}

nlohmann::ordered_json stat_to_ordered_json(const torch::Tensor& stat) {
  return tensor_to_json<nlohmann::ordered_json>(stat);
}

std::string python_json_text(const nlohmann::ordered_json& doc) {
  std::string text;
  dump_python_style(doc, 0, text);
  return text;
}

void write_stats_json(const std::filesystem::path& file, const DatasetStats& stats) {
  // ordered_json keeps LeRobot's stat order (min, max, mean, std, count, quantiles); the text is laid
  // out and numbers printed as Python's json.dump does, so a file written here diffs cleanly
  // against LeRobot's (features come in sorted order; LeRobot's order is that of a Python set).
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  for (const auto& [key, feature] : stats) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    for (const auto& name : feature.names()) entry[name] = tensor_to_json<nlohmann::ordered_json>(feature.get(name));
    doc[key] = std::move(entry);
  }
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError("cannot write stats file " + file.string());
  std::string text;
  dump_python_style(doc, 0, text);
  out << text;
  out.flush();
  if (!out) throw IoError("failed writing stats file " + file.string());
}

}  // namespace lrhost::data
