// Reading a run's metrics.jsonl: one JSON object per line, "step" (an integer) always present, every
// other value a number, keys absent on some lines (evaluation metrics only on evaluation lines).
// Training appends to the file while it runs, so its last line may be cut: an unparsable last line is
// left out without a word, while an unparsable line before it is an error naming the file and line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace lrhost::metrics {

struct MetricsRow {
  std::size_t line = 0;  // 1-based line number in the file (for messages)
  int64_t step = 0;
  std::map<std::string, double> values;  // every numeric key of the line but "step"
};

struct MetricsFile {
  std::filesystem::path path;
  std::vector<MetricsRow> rows;  // in file order (a resumed run may repeat steps)
  // One per key that had a non-numeric value (null, string, ...); those values are left out.
  std::vector<std::string> warnings;
  bool partial_last_line = false;  // the last line did not parse (still being written) and was left out

  // Every key of any row but "step", sorted.
  std::vector<std::string> keys() const;
  bool has_key(const std::string& key) const;
};

// Throws util::IoError when the file cannot be read, util::DataError naming the file and line for an
// unparsable line before the last, a line that is not an object, or a missing or non-integer "step".
// An empty file gives no rows (callers decide whether that is an error).
MetricsFile read_metrics_jsonl(const std::filesystem::path& file);

}  // namespace lrhost::metrics
