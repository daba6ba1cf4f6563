// A compiled Oniguruma regular expression over UTF-8 text, as the pre-tokenizers use it: UTF-8 encoding,
// Oniguruma's default syntax and no options. That is what Hugging Face `tokenizers` builds through its `onig`
// crate (Regex::new), so classes such as \p{L}, \p{N}, \s and the lookahead (?!\S) mean exactly the same here.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lrhost::text {

class UnicodeRegex {
 public:
  // Throws std::invalid_argument carrying Oniguruma's message when the pattern does not compile.
  explicit UnicodeRegex(const std::string& pattern);
  ~UnicodeRegex();
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  const std::string& pattern() const { return pattern_; }
  // Appends the byte ranges [begin, end) of every non-overlapping match in `text`, left to right (the text
  // must be valid UTF-8). Safe to call from several threads at once.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const;

 private:
  std::string pattern_;
  void* regex_ = nullptr;  // regex_t*; kept opaque so that oniguruma.h stays out of this header
};

// Python's re.fullmatch(pattern, text) is not None, for patterns in Python's syntax (Oniguruma's
// Python grammar): whether some way of matching the pattern spans the whole text. PEFT matches its
// `target_modules` regex against module names this way.
class PythonFullMatch {
 public:
  // Throws std::invalid_argument carrying Oniguruma's message when the pattern does not compile.
  explicit PythonFullMatch(const std::string& pattern);
  ~PythonFullMatch();
  PythonFullMatch(const PythonFullMatch&) = delete;
  PythonFullMatch& operator=(const PythonFullMatch&) = delete;

  bool operator()(std::string_view text) const;

 private:
  void* regex_ = nullptr;  // regex_t*
};

}  // namespace lrhost::text
