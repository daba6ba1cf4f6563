// The alphabet of SentencePiece-style BPE tokenizers with byte fallback (Gemma, PaliGemma): spaces are written
// as '▁' (U+2581) before the model sees the text, and bytes of characters missing from the vocabulary are
// tokens named <0xXX>. Used by the normalizer step on encoding and by the decoder.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lrhost::text {

// U+2581 LOWER ONE EIGHTH BLOCK in UTF-8: SentencePiece's visible space.
inline constexpr std::string_view metaspace = "\xE2\x96\x81";

// Appends `text` with every ' ' replaced by '▁' (the normalizer Replace(" ", "▁"); nothing else changes:
// no prefix space, no Unicode normalization).
void append_metaspace_normalized(std::string& out, std::string_view text);

// The byte a token such as "<0x0A>" stands for (two upper-case hex digits, as the vocabularies spell them),
// or nullopt for any other token.
std::optional<unsigned char> byte_fallback_byte(std::string_view token);

// The decoder Sequence[Replace("▁", " "), ByteFallback, Fuse] for one model token, appended to `out`. Byte
// tokens append their raw byte, so a run of them rebuilds the character.
void append_metaspace_decoded(std::string& out, std::string_view token);

}  // namespace lrhost::text
