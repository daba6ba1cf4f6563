// UTF-8 helpers; see utf8.hpp.
#include "host/text/utf8.hpp"

namespace lrhost::text {

std::optional<std::size_t> find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code_point = 0, minimum = 0;
    if ((lead >> 5) == 0x6)
      length = 2, code_point = lead & 0x1F, minimum = 0x80;
    else if ((lead >> 4) == 0xE)
      length = 3, code_point = lead & 0x0F, minimum = 0x800;
    else if ((lead >> 3) == 0x1E)
      length = 4, code_point = lead & 0x07, minimum = 0x10000;
    else
      return i;
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next >> 6) != 0x2) return i;
      code_point = (code_point << 6) | (next & 0x3F);
    }
    if (code_point < minimum || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return i;
    i += length;
  }
  return std::nullopt;
}

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

}  // namespace lrhost::text
