// One table of an enum's names: the lookup in both directions and the list of valid names an error
// shows come from the same entries, so adding a value is one line and no message can go stale
// (LÖVE's getConstant, with the "expected one of" text it lacks). Declare beside the enum:
//   enum class MixedPrecision { no, bf16, fp16 };
//   inline constexpr util::NameTable kMixedPrecisionNames{std::array{
//       std::pair{MixedPrecision::no, "no"}, std::pair{MixedPrecision::bf16, "bf16"}, ...}};
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "host/util/error.hpp"

namespace lrhost::util {

template <class Enum, std::size_t N>
class NameTable {
 public:
  constexpr explicit NameTable(std::array<std::pair<Enum, const char*>, N> entries) : entries_(entries) {}

  // The name of `value` (every value of the enum must be in the table).
  constexpr const char* name(Enum value) const {
    for (const auto& [entry, text] : entries_)
      if (entry == value) return text;
    return "?";
  }
  std::optional<Enum> find(std::string_view text) const {
    for (const auto& [entry, name] : entries_)
      if (text == name) return entry;
    return std::nullopt;
  }
  // The value named `text`; ConfigError "WHAT must be one of 'a', 'b', 'c', got 'x'" otherwise.
  Enum parse(std::string_view text, const std::string& what) const {
    if (auto found = find(text)) return *found;
    throw ConfigError(what + " must be one of " + choices() + ", got '" + std::string(text) + "'");
  }
  // "'a', 'b', 'c'" (util::quoted_list's form).
  std::string choices() const {
    std::string text;
    for (const auto& [entry, name] : entries_) text += (text.empty() ? "'" : ", '") + std::string(name) + "'";
    return text;
  }

 private:
  std::array<std::pair<Enum, const char*>, N> entries_;
};

}  // namespace lrhost::util
