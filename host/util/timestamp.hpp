// Wall-clock times as text for files a person reads: lock files, log headers.
#pragma once
#include <chrono>
#include <string>

namespace lrhost::util {

// "2025-03-01T14:05:09Z" (ISO-8601, UTC, whole seconds).
std::string utc_timestamp(std::chrono::system_clock::time_point when = std::chrono::system_clock::now());

}  // namespace lrhost::util
