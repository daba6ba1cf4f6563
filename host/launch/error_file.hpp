// The error file a rank leaves for its launcher. A rank that fails (Lua error, load error, C++
// exception) writes one JSON object to $LRHOST_ERROR_FILE: rank, host, pid, the first line of the
// message, the full text with its traceback, the time (ISO-8601 for people, microseconds since the
// epoch for ordering ranks' errors), and whether the error is a consequence of another rank's
// failure (error_kind.hpp). The launcher reads every rank's file back to name the root cause of a
// failed job (root_cause.hpp); a rank killed by a signal leaves none, which the report says.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace lrhost::launch {

struct ErrorRecord {
  int rank = 0;
  std::string host;
  long pid = 0;
  std::string message;    // first line of the error
  std::string traceback;  // the full text, Lua traceback included
  std::string time;       // ISO-8601, UTC
  // When the error was recorded, in microseconds since the Unix epoch (system clock): the same
  // clock for every rank of a node, NTP-close across nodes. 0 in files written before it existed.
  std::int64_t time_us = 0;
  bool consequence = false;  // error_kind.hpp: a peer went away, this rank only noticed
};

// A record for this process now: rank from $RANK (0 when unset), host name, pid, time, and whether
// `text` is a consequence.
ErrorRecord error_record_for(const std::string& text);

// Writes the record atomically (temporary file + rename), so a reader never sees half a file.
// Throws util::IoError naming the path when it cannot.
void write_error_file(const std::filesystem::path& path, const ErrorRecord& record);

// This machine's host name as error files and reports show it ("unknown-host" if unavailable).
std::string host_name();

// The record in `path`; nullopt when there is no such file. Throws util::IoError when the file
// exists but is not an error file. A file without "consequence" is classified from its text.
std::optional<ErrorRecord> read_error_file(const std::filesystem::path& path);

// Writes `text` to $LRHOST_ERROR_FILE when the launcher asked for one; otherwise does nothing.
// Never throws: a failure to write is printed as a warning, the original error still matters more.
void record_error_for_launcher(const std::string& text) noexcept;

}  // namespace lrhost::launch
