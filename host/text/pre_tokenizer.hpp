// The pre-tokenizer pipeline of a byte-level tokenizer.json: the steps the file declares, applied in order,
// each one splitting every piece the previous steps produced (as a `Sequence` does in Hugging Face
// `tokenizers`). Supported steps: Digits, ByteLevel (GPT-2 regex, add_prefix_space, use_regex; maps the
// bytes to the byte-level alphabet) and Split with a regex and the Isolated behaviour.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/text/unicode_regex.hpp"

namespace lrhost::text {

// The pattern of GPT-2's ByteLevel pre-tokenizer, byte for byte as Hugging Face tokenizers compiles it.
inline constexpr const char* gpt2_split_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class PreTokenizer {
 public:
  // Digits: each numeric character (Unicode category N, like Rust's char::is_numeric) becomes its own
  // piece, or with individual_digits=false each run of them.
  void add_digits(bool individual_digits);
  // ByteLevel: optionally prepends a space to a piece that does not start with one, splits by the GPT-2
  // pattern when use_regex, then maps every piece's bytes to the byte-level alphabet.
  void add_byte_level(bool add_prefix_space, bool use_regex);
  // Split{pattern: {Regex}, behavior: Isolated, invert: false}: matches and the text between them become
  // pieces. Throws std::invalid_argument when the pattern does not compile.
  void add_split(const std::string& pattern);

  // The pre-tokens of one text: views into `buffer`, which the steps rewrite only where they change bytes
  // (the byte-level mapping, a prefix space); splitting only narrows views. Reused between calls.
  struct Pieces {
    std::string buffer, scratch;
    std::vector<std::pair<std::size_t, std::size_t>> ranges, next_ranges, matches;  // [begin, end) in buffer
    std::size_t size() const { return ranges.size(); }
    std::string_view operator[](std::size_t i) const {
      return std::string_view(buffer).substr(ranges[i].first, ranges[i].second - ranges[i].first);
    }
  };
  // Splits one span of text (valid UTF-8, no added tokens in it) into pre-tokens; empty pieces are dropped.
  void run(std::string_view text, Pieces& pieces) const;
  // "Digits(individual_digits=true) -> ByteLevel(add_prefix_space=false)" for diagnostics.
  std::string describe() const;
  bool empty() const { return steps_.empty(); }

 private:
  enum class Kind { digits, byte_level, split };
  struct Step {
    Kind kind;
    bool flag_a = false;  // digits: individual_digits; byte_level: add_prefix_space
    bool flag_b = false;  // byte_level: use_regex
    std::shared_ptr<const UnicodeRegex> regex;
  };
  std::vector<Step> steps_;
};

}  // namespace lrhost::text
