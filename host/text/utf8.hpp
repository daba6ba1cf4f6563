// UTF-8 helpers of the tokenizer: input validation (the regex engine and the byte-level mapping both need
// well-formed UTF-8) and code-point encoding for the byte-level alphabet.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lrhost::text {

// Bytes of the UTF-8 sequence that starts with `lead` (1 for a stray continuation byte).
inline std::size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Byte offset of the first malformed sequence (overlong forms, surrogates and code points above U+10FFFF
// included), or nullopt when `text` is valid UTF-8.
std::optional<std::size_t> find_invalid_utf8(std::string_view text);

// Appends the UTF-8 encoding of `code_point` (< 0x110000) to `out`.
void append_utf8(std::string& out, std::uint32_t code_point);

}  // namespace lrhost::text
