// Installs the default spdlog logger with rank-tagged console and file sinks.
#include "host/util/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include "host/util/log_file.hpp"
#include "host/util/status_line.hpp"

namespace lrhost::util {
namespace {
// The console sink with the terminal's status line moved out of the way of every record.
class StatusLineAwareSink final : public spdlog::sinks::sink {
 public:
  explicit StatusLineAwareSink(spdlog::sink_ptr console) : console_(std::move(console)) {}
  void log(const spdlog::details::log_msg& message) override {
    auto& line = StatusLine::instance();
    line.erase_for_log();
    console_->log(message);
    line.redraw_after_log();
  }
  void flush() override { console_->flush(); }
  void set_pattern(const std::string& pattern) override { console_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    console_->set_formatter(std::move(formatter));
  }

 private:
  spdlog::sink_ptr console_;
};
}  // namespace

void setup_logging(const LogOptions& options) {
  const std::string tag = options.tag.empty() ? "rank" + std::to_string(options.rank) : options.tag;
  const std::string pattern = "[%H:%M:%S.%e] [" + tag + "] [%^%l%$] %v";
  spdlog::sink_ptr console =
      std::make_shared<StatusLineAwareSink>(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  // The launcher tag counts as a main rank: its lines are the job's status.
  bool main_rank = options.rank == 0 || !options.tag.empty();
  console->set_level(main_rank ? (options.verbose ? spdlog::level::debug : spdlog::level::info) : spdlog::level::warn);
  std::vector<spdlog::sink_ptr> sinks{console};
  if (options.log_dir) {
    std::filesystem::create_directories(*options.log_dir);
    auto path = std::filesystem::path(*options.log_dir) / (tag + ".log");
    // Appended, never truncated: an earlier attempt's log (a restart, a resumed or repeated job in
    // the same run folder) is often exactly what explains this one.
    append_attempt_header(path, options.restart_count);
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string(), /*truncate=*/false);
    file->set_level(spdlog::level::debug);
    sinks.push_back(file);
  }
  auto logger = std::make_shared<spdlog::logger>("lrhost", sinks.begin(), sinks.end());
  logger->set_pattern(pattern);
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::info);  // a killed rank's log must still hold what it said
  spdlog::set_default_logger(logger);
}

int rank_from_environment() {
  const char* rank = std::getenv("RANK");
  if (rank == nullptr) return 0;
  char* end = nullptr;
  long value = std::strtol(rank, &end, 10);
  return (end != rank && *end == '\0' && value >= 0 && value < 1'000'000) ? static_cast<int>(value) : 0;
}

}  // namespace lrhost::util
