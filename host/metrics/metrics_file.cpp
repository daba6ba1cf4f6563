// The metrics.jsonl reader; see metrics_file.hpp.
#include "host/metrics/metrics_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "host/util/error.hpp"

namespace lrhost::metrics {
namespace {

std::string json_type_name(const nlohmann::json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

int64_t read_step(const nlohmann::json& object, const std::string& where) {
  const auto found = object.find("step");
  if (found == object.end())
    throw util::DataError(where + ": no \"step\" key; every line of metrics.jsonl needs an integer \"step\"");
  const nlohmann::json& step = *found;
  if (step.is_number_unsigned() || step.is_number_integer()) {
    int64_t value = step.get<int64_t>();
    if (value >= 0) return value;
  } else if (step.is_number_float()) {
    // 50.0 is accepted as 50: some writers print every number as a float.
    double value = step.get<double>();
    if (value >= 0 && value == std::floor(value) && value < 9.0e18) return static_cast<int64_t>(value);
  }
  throw util::DataError(where + ": \"step\" must be a whole number >= 0, got " + step.dump());
}

}  // namespace

std::vector<std::string> MetricsFile::keys() const {
  std::set<std::string> names;
  for (const auto& row : rows)
    for (const auto& [key, value] : row.values) names.insert(key);
  return {names.begin(), names.end()};
}

bool MetricsFile::has_key(const std::string& key) const {
  for (const auto& row : rows)
    if (row.values.count(key)) return true;
  return false;
}

MetricsFile read_metrics_jsonl(const std::filesystem::path& file) {
  std::ifstream input(file, std::ios::binary);
  if (!input) throw util::IoError("cannot read metrics file " + file.string());
  std::ostringstream buffer;
  buffer << input.rdbuf();
  if (input.bad()) throw util::IoError("error while reading metrics file " + file.string());
  const std::string text = buffer.str();

  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  auto blank = [](const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; };
  std::size_t last = lines.size();  // index of the last non-blank line; lines.size() when there is none
  for (std::size_t i = lines.size(); i-- > 0;)
    if (!blank(lines[i])) {
      last = i;
      break;
    }

  MetricsFile result;
  result.path = file;
  std::set<std::string> warned;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (blank(lines[i])) continue;
    const std::string where = fmt::format("{}:{}", file.string(), i + 1);
    nlohmann::json object = nlohmann::json::parse(lines[i], nullptr, false);
    if (object.is_discarded()) {
      // Training appends one line at a time; a reader may see the last one half-written.
      if (i == last) {
        result.partial_last_line = true;
        break;
      }
      throw util::DataError(where + ": not valid JSON (only the last line may be incomplete)",
                            "each line of metrics.jsonl must be one JSON object, e.g. {\"step\": 50, \"loss\": 0.81}");
    }
    if (!object.is_object())
      throw util::DataError(where + ": expected a JSON object, got " + std::string(object.type_name()),
                            "each line of metrics.jsonl must be one JSON object, e.g. {\"step\": 50, \"loss\": 0.81}");
    MetricsRow row;
    row.line = i + 1;
    row.step = read_step(object, where);
    for (const auto& [key, value] : object.items()) {
      if (key == "step") continue;
      if (value.is_number()) {
        row.values[key] = value.get<double>();
      } else if (warned.insert(key).second) {
        result.warnings.push_back(fmt::format("{}: \"{}\" is {}, not a number; such values of \"{}\" are skipped",
                                              where, key, json_type_name(value), key));
      }
    }
    result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace lrhost::metrics
