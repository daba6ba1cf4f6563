// GPT-2's byte-level alphabet: every byte 0..255 stands for one printable Unicode character, so that BPE
// works on text without spaces or control characters and never needs an unknown token. Printable Latin-1
// bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves, the other 68 bytes for U+0100 + n
// in byte order (space -> 'Ġ', newline -> 'Ċ').
#pragma once
#include <string>
#include <string_view>

namespace lrhost::text {

// Appends the byte-level characters (UTF-8) of every byte of `bytes` to `out`.
void append_byte_level(std::string& out, std::string_view bytes);

// The ByteLevel decoder: maps byte-level characters back to the bytes they stand for (characters outside
// the alphabet are kept as they are). The result may be invalid UTF-8 when tokens split a character.
std::string byte_level_decode(std::string_view mapped);

}  // namespace lrhost::text
