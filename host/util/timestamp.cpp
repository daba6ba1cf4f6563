// Wall-clock times as text (see timestamp.hpp).
#include "host/util/timestamp.hpp"

#include <array>
#include <ctime>

namespace lrhost::util {

std::string utc_timestamp(std::chrono::system_clock::time_point when) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text.data();
}

}  // namespace lrhost::util
