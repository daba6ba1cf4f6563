// Writing and reading rank error files with nlohmann::json. Written with plain stdio rather than
// spdlog, because it runs on the way out of a failing process where logging may be half torn down.
#include "host/launch/error_file.hpp"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "host/launch/error_kind.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"
#include "host/util/timestamp.hpp"

namespace lrhost::launch {

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
  return name.data();
}

ErrorRecord error_record_for(const std::string& text) {
  ErrorRecord record;
  record.rank = util::rank_from_environment();
  record.host = host_name();
  record.pid = static_cast<long>(getpid());
  record.message = text.substr(0, text.find('\n'));
  record.traceback = text;
  auto now = std::chrono::system_clock::now();
  record.time = util::utc_timestamp(now);
  record.time_us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  record.consequence = is_consequence(text);
  return record;
}

void write_error_file(const std::filesystem::path& path, const ErrorRecord& record) {
  nlohmann::json json = {{"rank", record.rank},
                         {"host", record.host},
                         {"pid", record.pid},
                         {"message", record.message},
                         {"traceback", record.traceback},
                         {"time", record.time},
                         {"time_us", record.time_us},
                         {"consequence", record.consequence}};
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // Same folder as the target, so the rename is atomic (same file system).
  auto temporary = path;
  temporary += ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    out.flush();
    if (!out) throw util::IoError("could not write the error file '" + temporary.string() + "'");
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw util::IoError("could not move the error file into place at '" + path.string() + "': " + ec.message());
  }
}

std::optional<ErrorRecord> read_error_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const std::string not_ours =
      "'" + path.string() + "' is not an lrhost error file (expected a JSON object with a string 'message')";
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("message")) throw util::IoError(not_ours);
  try {
    ErrorRecord record;
    record.rank = json.value("rank", 0);
    record.host = json.value("host", "");
    record.pid = json.value("pid", 0L);
    record.message = json.value("message", "");
    record.traceback = json.value("traceback", "");
    record.time = json.value("time", "");
    record.time_us = json.value("time_us", std::int64_t{0});
    record.consequence = json.contains("consequence") ? json.at("consequence").get<bool>()
                                                      : is_consequence(record.traceback + "\n" + record.message);
    return record;
  } catch (const nlohmann::json::exception&) {
    throw util::IoError(not_ours);  // a field of the wrong type
  }
}

void record_error_for_launcher(const std::string& text) noexcept {
  const char* path = std::getenv("LRHOST_ERROR_FILE");
  if (path == nullptr || *path == '\0') return;
  try {
    write_error_file(path, error_record_for(text));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "lrhost: warning: %s\n", error.what());
  }
}

}  // namespace lrhost::launch
