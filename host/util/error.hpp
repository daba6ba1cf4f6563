// The small exception hierarchy of lrhost. Every error a user can cause is one of these: a message
// that names the file, key or argument and what was expected, plus an optional hint on how to fix
// it. Callers at the edge (CLI, Lua bindings) print both; nothing else catches them.
#pragma once
#include <stdexcept>
#include <string>

namespace lrhost::util {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string hint = {})
      : std::runtime_error(message), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// A bad command line or recipe configuration (unknown key, wrong type, bad value).
class ConfigError : public Error {
  using Error::Error;
};

// A file that is missing, unreadable or not in the expected format.
class IoError : public Error {
  using Error::Error;
};

// Data whose content breaks a rule of its format: a frame timestamp outside tolerance, a column
// with the wrong shape, an index out of range. The message names the file and what was expected.
class DataError : public Error {
  using Error::Error;
};

// A feature that exists in the API but is not implemented yet; it says so loudly.
class NotImplemented : public Error {
  using Error::Error;
};

// Message plus hint as one printable text.
std::string describe(const std::exception& error);

}  // namespace lrhost::util
