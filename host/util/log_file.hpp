// Log files are never truncated: each process that opens one (a rank, the launcher, a plain run)
// appends to it, first writing a header line that says which attempt follows, so a run folder that
// sees several jobs (a resume, a restart, a job after a finished one) keeps every job's log:
//   ===== attempt 2 (restart 1) started 2025-03-01T14:05:09Z pid 1234 =====
// The attempt counts the opens of this file (earlier headers + 1); the restart is the launcher's
// restart count within one job (LRHOST_RESTART_COUNT), shown when known.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace lrhost::util {

inline constexpr const char* kAttemptHeaderPrefix = "===== attempt ";

// The header line, without the newline.
std::string attempt_header(int attempt, std::optional<int> restart_count, std::chrono::system_clock::time_point when,
                           long pid);

// How many attempt headers `file` holds (0 when it does not exist).
int count_attempt_headers(const std::filesystem::path& file);

// Appends this process's attempt header to `file` (created when missing) and returns it.
// util::IoError naming the file when it cannot be written.
std::string append_attempt_header(const std::filesystem::path& file, std::optional<int> restart_count);

}  // namespace lrhost::util
