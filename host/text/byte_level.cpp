// The byte-level alphabet; see byte_level.hpp.
#include "host/text/byte_level.hpp"

#include <array>
#include <cstdint>
#include <unordered_map>

#include "host/text/utf8.hpp"

namespace lrhost::text {
namespace {

struct ByteAlphabet {
  std::array<std::string, 256> encoded;             // byte -> its character as UTF-8
  std::unordered_map<std::uint32_t, char> decoded;  // code point -> byte
  ByteAlphabet() {
    std::uint32_t next_extra = 0;
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
      bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
      std::uint32_t code_point = printable ? byte : 256 + next_extra++;
      append_utf8(encoded[byte], code_point);
      decoded[code_point] = static_cast<char>(byte);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet instance;
  return instance;
}

}  // namespace

void append_byte_level(std::string& out, std::string_view bytes) {
  const auto& encoded = alphabet().encoded;
  for (char byte : bytes) out += encoded[static_cast<unsigned char>(byte)];
}

std::string byte_level_decode(std::string_view mapped) {
  const auto& decoded = alphabet().decoded;
  std::string out;
  std::size_t i = 0;
  while (i < mapped.size()) {
    std::size_t length = utf8_sequence_length(static_cast<unsigned char>(mapped[i]));
    if (i + length > mapped.size()) length = mapped.size() - i;
    // Decode the code point (the input comes from vocabulary strings, which are valid UTF-8).
    auto lead = static_cast<unsigned char>(mapped[i]);
    std::uint32_t code_point = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k)
      code_point = (code_point << 6) | (static_cast<unsigned char>(mapped[i + k]) & 0x3F);
    auto found = decoded.find(code_point);
    if (found != decoded.end())
      out += found->second;
    else
      out.append(mapped.substr(i, length));
    i += length;
  }
  return out;
}

}  // namespace lrhost::text
