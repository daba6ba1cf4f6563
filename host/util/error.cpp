// Formatting of lrhost errors for printing at the edges (CLI and Lua).
#include "host/util/error.hpp"

namespace lrhost::util {

std::string describe(const std::exception& error) {
  std::string text = error.what();
  if (const auto* ours = dynamic_cast<const Error*>(&error); ours && !ours->hint().empty())
    text += "\n  hint: " + ours->hint();
  return text;
}

}  // namespace lrhost::util
