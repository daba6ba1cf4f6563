// Edit distance and nearest-candidate search for "did you mean" messages; sizes for people; shell words.
#include "host/util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "host/util/error.hpp"

namespace lrhost::util {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates, std::size_t limit) {
  // A candidate is "near" when at most about a third of the word has to change, or when one
  // contains the other (e.g. 'lr' vs 'optimizer.lr').
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& candidate : candidates) {
    std::size_t distance = edit_distance(word, candidate);
    bool contains = candidate.find(word) != std::string::npos || word.find(candidate) != std::string::npos;
    if (distance <= std::max<std::size_t>(2, word.size() / 3) || contains) scored.emplace_back(distance, candidate);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& x, auto& y) { return x.first < y.first; });
  std::vector<std::string> result;
  for (auto& [distance, candidate] : scored) {
    if (result.size() == limit) break;
    result.push_back(candidate);
  }
  return result;
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "'" : ", '") + item + "'";
  return text;
}

int64_t parse_memory_size(const std::string& text, const std::string& what) {
  const auto fail = [&]() -> int64_t {
    throw ConfigError(what + ": expected a size such as 24GiB, 80GB or 512MiB, got '" + text + "'",
                      "GiB/MiB/KiB (and G/M/K) are powers of 1024, GB/MB/KB powers of 1000");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return fail();
  }
  std::string unit = lowercase(text.substr(used));
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  const std::pair<const char*, double> units[] = {{"", 1},
                                                  {"b", 1},
                                                  {"k", 1024.0},
                                                  {"kib", 1024.0},
                                                  {"kb", 1e3},
                                                  {"m", 1048576.0},
                                                  {"mib", 1048576.0},
                                                  {"mb", 1e6},
                                                  {"g", 1073741824.0},
                                                  {"gib", 1073741824.0},
                                                  {"gb", 1e9},
                                                  {"t", 1099511627776.0},
                                                  {"tib", 1099511627776.0},
                                                  {"tb", 1e12}};
  for (const auto& [name, scale] : units)
    if (unit == name && value * scale >= 1 && value * scale < 9e18) return static_cast<int64_t>(value * scale);
  return fail();
}

std::string human_bytes(std::uintmax_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%ju B", bytes);
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string shell_quoted(const std::string& text) {
  bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("-_./=:,+@%").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace lrhost::util
