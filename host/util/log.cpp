// Installs the default spdlog logger with rank-tagged console and file sinks.
#include "host/util/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <filesystem>

namespace lrhost::util {

void setup_logging(const LogOptions& options) {
  const std::string pattern = "[%H:%M:%S.%e] [rank" + std::to_string(options.rank) + "] [%^%l%$] %v";
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(options.rank == 0 ? (options.verbose ? spdlog::level::debug : spdlog::level::info)
                                       : spdlog::level::warn);
  std::vector<spdlog::sink_ptr> sinks{console};
  if (options.log_dir) {
    std::filesystem::create_directories(*options.log_dir);
    auto path = std::filesystem::path(*options.log_dir) / ("rank" + std::to_string(options.rank) + ".log");
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string(), /*truncate=*/true);
    file->set_level(spdlog::level::debug);
    sinks.push_back(file);
  }
  auto logger = std::make_shared<spdlog::logger>("lrhost", sinks.begin(), sinks.end());
  logger->set_pattern(pattern);
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace lrhost::util
