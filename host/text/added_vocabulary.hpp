// The added tokens of a tokenizer.json (special tokens such as <|im_end|>, image placeholders): found in
// the raw text by exact match before any pre-tokenization, so they always become their one id. Matching is
// leftmost-longest, first over the tokens with normalized=false and then, inside the remaining text, over
// those with normalized=true — Hugging Face tokenizers' order. With a normalizer the caller runs the two
// passes itself (split_unnormalized, normalize the text segments, split_normalized), and a normalized
// token is searched for in its normalized spelling (AddedToken::pattern).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lrhost::text {

struct AddedToken {
  std::int32_t id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
  std::string pattern;  // what is searched for when it differs from content (a normalized token's spelling)
};

// A stretch of the input: an added token's id, or text (id < 0) for the pre-tokenizer and the model.
struct Segment {
  std::string_view text;
  std::int32_t id = -1;
};

class AddedVocabulary {
 public:
  void add(AddedToken token);
  // Splits `text` into segments in order; text segments are never empty. Both passes, no normalizer.
  void split(std::string_view text, std::vector<Segment>& segments) const;
  // One pass each, appending to `segments`: the normalized=false tokens in raw text, the normalized=true
  // tokens in normalized text.
  void split_unnormalized(std::string_view text, std::vector<Segment>& segments) const {
    split_with(raw_, text, segments);
  }
  void split_normalized(std::string_view text, std::vector<Segment>& segments) const {
    split_with(normalized_, text, segments);
  }

  std::optional<std::int32_t> id_of(std::string_view content) const;
  const AddedToken* token_of(std::int32_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // One matcher per normalized flag: token indices bucketed by first byte, longest first.
  struct Matcher {
    std::array<std::vector<std::size_t>, 256> by_first_byte;
    bool empty = true;
  };
  void split_with(const Matcher& matcher, std::string_view text, std::vector<Segment>& segments) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, std::size_t> by_content_;
  std::unordered_map<std::int32_t, std::size_t> by_id_;
  Matcher raw_, normalized_;
};

}  // namespace lrhost::text
