// Attempt headers of appended log files (see log_file.hpp).
#include "host/util/log_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "host/util/error.hpp"
#include "host/util/timestamp.hpp"

namespace lrhost::util {

std::string attempt_header(int attempt, std::optional<int> restart_count, std::chrono::system_clock::time_point when,
                           long pid) {
  std::string header = std::string(kAttemptHeaderPrefix) + std::to_string(attempt);
  if (restart_count) header += " (restart " + std::to_string(*restart_count) + ")";
  return header + " started " + utc_timestamp(when) + " pid " + std::to_string(pid) + " =====";
}

int count_attempt_headers(const std::filesystem::path& file) {
  std::ifstream in(file);
  int count = 0;
  // Line by line: a log of a long run is megabytes, read once per process start.
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(kAttemptHeaderPrefix)) ++count;
  return count;
}

std::string append_attempt_header(const std::filesystem::path& file, std::optional<int> restart_count) {
  std::string header = attempt_header(count_attempt_headers(file) + 1, restart_count, std::chrono::system_clock::now(),
                                      static_cast<long>(getpid()));
  // A process killed mid-line leaves a partial last line; the header must start a line of its own.
  bool ends_mid_line = false;
  if (std::ifstream last(file, std::ios::binary | std::ios::ate); last && last.tellg() > 0) {
    last.seekg(-1, std::ios::end);
    ends_mid_line = last.get() != '\n';
  }
  std::ofstream out(file, std::ios::app);
  out << (ends_mid_line ? "\n" : "") << header << '\n';
  out.flush();
  if (!out) throw IoError("could not write the log file '" + file.string() + "': " + std::strerror(errno));
  return header;
}

}  // namespace lrhost::util
