// The metrics.jsonl writer; see jsonl_sink.hpp.
#include "host/metrics/jsonl_sink.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "host/util/error.hpp"

namespace lrhost::metrics {
namespace fs = std::filesystem;

JsonlSink::JsonlSink(fs::path path, int64_t first_step) : path_(std::move(path)), first_step_(first_step) {}

JsonlSink::~JsonlSink() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonlSink::open() {
  std::error_code error;
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), error);
  if (error) throw util::IoError("cannot create the folder of metrics file " + path_.string() + ": " + error.message());
  if (fs::exists(path_)) {
    // Keep the earlier run's records before this run's first step; a partial last line (the run was
    // killed mid-write) or any record at or after first_step_ goes.
    std::ifstream in(path_);
    std::vector<std::string> kept;
    std::string line;
    int64_t dropped = 0;
    while (std::getline(in, line)) {
      auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      bool keep = record.is_object() && record.contains("step") && record["step"].is_number_integer() &&
                  record["step"].get<int64_t>() < first_step_;
      if (keep)
        kept.push_back(line);
      else
        ++dropped;
    }
    if (dropped > 0) {
      fs::path temporary = path_;
      temporary += ".tmp" + std::to_string(::getpid());
      {
        std::ofstream out(temporary, std::ios::trunc);
        for (const auto& record : kept) out << record << '\n';
        if (!out.flush()) throw util::IoError("cannot write " + temporary.string());
      }
      fs::rename(temporary, path_, error);
      if (error) throw util::IoError("cannot replace metrics file " + path_.string() + ": " + error.message());
      spdlog::info("metrics file {}: continuing after step {} ({} later records of the earlier run dropped)",
                   path_.string(), first_step_ - 1, dropped);
    }
  }
  file_ = std::fopen(path_.c_str(), "a");
  if (file_ == nullptr) throw util::IoError("cannot open metrics file " + path_.string() + " for appending");
}

void JsonlSink::write(int64_t step, double wall_time, const std::map<std::string, double>& metrics) {
  if (file_ == nullptr) open();
  nlohmann::ordered_json record;
  record["step"] = step;
  record["time"] = wall_time;
  for (const auto& [name, value] : metrics) {
    if (name == "step" || name == "time")
      throw util::ConfigError("metric name '" + name + "' is reserved in " + path_.string() +
                              " (the record's own field)");
    if (std::isfinite(value))
      record[name] = value;
    else
      record[name] = nullptr;
  }
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw util::IoError("cannot append to metrics file " + path_.string());
}

}  // namespace lrhost::metrics
