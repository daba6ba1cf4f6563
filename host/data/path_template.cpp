// Python str.format subset for LeRobot path templates; see path_template.hpp.
#include "host/data/path_template.hpp"

#include <fmt/format.h>

#include "host/util/error.hpp"

namespace lrhost::data {
namespace {
std::string format_value(const TemplateValue& value, const std::string& spec, const std::string& name,
                         const std::string& pattern, const std::string& what) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    if (!spec.empty())
      throw util::DataError(what + ": placeholder {" + name + ":" + spec + "} in '" + pattern +
                            "' formats a string with a number format");
    return *text;
  }
  long long number = std::get<long long>(value);
  if (spec.empty() || spec == "d") return std::to_string(number);
  // "0Nd": zero-padded to width N.
  if (spec.size() >= 3 && spec.front() == '0' && spec.back() == 'd') {
    std::string digits = spec.substr(1, spec.size() - 2);
    if (digits.size() <= 3 && digits.find_first_not_of("0123456789") == std::string::npos) {
      int width = std::stoi(digits);
      return fmt::format("{:0{}d}", number, width);
    }
  }
  throw util::DataError(what + ": unsupported format spec '" + spec + "' for {" + name + "} in '" + pattern + "'",
                        "LeRobot templates use {name} or {name:03d}");
}
}  // namespace

std::string expand_path_template(const std::string& pattern, const std::map<std::string, TemplateValue>& values,
                                 const std::string& what) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '{' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < pattern.size() && pattern[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      std::size_t close = pattern.find('}', i);
      if (close == std::string::npos)
        throw util::DataError(what + ": unbalanced '{' in path template '" + pattern + "'");
      std::string field = pattern.substr(i + 1, close - i - 1);
      std::size_t colon = field.find(':');
      std::string name = field.substr(0, colon);
      std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
      auto found = values.find(name);
      if (found == values.end())
        throw util::DataError(what + ": path template '" + pattern + "' uses {" + name +
                              "}, which LeRobot does not define here");
      out += format_value(found->second, spec, name, pattern, what);
      i = close;
    } else if (c == '}') {
      throw util::DataError(what + ": unbalanced '}' in path template '" + pattern + "'");
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace lrhost::data
