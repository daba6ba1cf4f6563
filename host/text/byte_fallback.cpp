// Metaspace normalization and byte-fallback decoding; see byte_fallback.hpp.
#include "host/text/byte_fallback.hpp"

namespace lrhost::text {

void append_metaspace_normalized(std::string& out, std::string_view text) {
  std::size_t start = 0;
  for (std::size_t space = text.find(' '); space != std::string_view::npos; space = text.find(' ', start)) {
    out.append(text.substr(start, space - start));
    out.append(metaspace);
    start = space + 1;
  }
  out.append(text.substr(start));
}

std::optional<unsigned char> byte_fallback_byte(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  int high = hex(token[3]), low = hex(token[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<unsigned char>(high * 16 + low);
}

void append_metaspace_decoded(std::string& out, std::string_view token) {
  if (auto byte = byte_fallback_byte(token)) {
    out.push_back(static_cast<char>(*byte));
    return;
  }
  std::size_t start = 0;
  for (std::size_t at = token.find(metaspace); at != std::string_view::npos; at = token.find(metaspace, start)) {
    out.append(token.substr(start, at - start));
    out.push_back(' ');
    start = at + metaspace.size();
  }
  out.append(token.substr(start));
}

}  // namespace lrhost::text
