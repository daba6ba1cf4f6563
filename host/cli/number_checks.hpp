// Command-line number checks whose messages say what was expected. CLI11's own PositiveNumber and
// NonNegativeNumber print "Value 0 not in range 0.000000 to 1797...(300 digits)"; these print
// "--gpus: expected a number greater than 0, got '0'".
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace lrhost::cli {

inline CLI::Validator number_check(bool allow_zero) {
  const std::string wanted = allow_zero ? "a number of 0 or more" : "a number greater than 0";
  return CLI::Validator(
      [allow_zero, wanted](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < 0 || (!allow_zero && value == 0))
          return "expected " + wanted + ", got '" + text + "'";
        return {};
      },
      allow_zero ? "NONNEGATIVE" : "POSITIVE");
}

inline const CLI::Validator positive_number = number_check(false);
inline const CLI::Validator non_negative_number = number_check(true);

}  // namespace lrhost::cli
