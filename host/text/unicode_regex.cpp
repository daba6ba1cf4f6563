// Oniguruma wrapper; see unicode_regex.hpp.
#include "host/text/unicode_regex.hpp"

#include "host/text/utf8.hpp"

#include <oniguruma.h>

#include <memory>
#include <mutex>
#include <stdexcept>

namespace lrhost::text {
namespace {

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string error_text(int code, OnigErrorInfo* info) {
  OnigUChar buffer[ONIG_MAX_ERROR_MESSAGE_LEN];
  int length = onig_error_code_to_str(buffer, code, info);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(length));
}

struct RegionDeleter {
  void operator()(OnigRegion* region) const { onig_region_free(region, 1); }
};

// One match region per thread: find_all runs per pre-token, so allocating one per call would cost more than
// the search itself.
OnigRegion* thread_region() {
  thread_local std::unique_ptr<OnigRegion, RegionDeleter> region(onig_region_new());
  return region.get();
}

}  // namespace

UnicodeRegex::UnicodeRegex(const std::string& pattern) : pattern_(pattern) {
  initialize_oniguruma();
  regex_t* compiled = nullptr;
  OnigErrorInfo info{};
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  int code = onig_new(&compiled, begin, begin + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, OnigDefaultSyntax,
                      &info);
  if (code != ONIG_NORMAL) throw std::invalid_argument(error_text(code, &info));
  regex_ = compiled;
}

UnicodeRegex::~UnicodeRegex() {
  if (regex_) onig_free(static_cast<regex_t*>(regex_));
}

void UnicodeRegex::find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const {
  auto* regex = static_cast<regex_t*>(regex_);
  OnigRegion* region = thread_region();
  const auto* start = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = start + text.size();
  std::size_t position = 0;
  while (position <= text.size()) {
    onig_region_clear(region);
    auto found = onig_search(regex, start, end, start + position, end, region, ONIG_OPTION_NONE);
    if (found == ONIG_MISMATCH) break;
    if (found < 0)
      throw std::runtime_error("regex '" + pattern_ + "' failed: " + error_text(static_cast<int>(found), nullptr));
    auto match_begin = static_cast<std::size_t>(region->beg[0]);
    auto match_end = static_cast<std::size_t>(region->end[0]);
    matches.emplace_back(match_begin, match_end);
    if (match_end > match_begin) {
      position = match_end;
    } else {
      // An empty match: step over one UTF-8 character so that the search moves on.
      if (match_end >= text.size()) break;
      position = match_end + utf8_sequence_length(static_cast<unsigned char>(text[match_end]));
    }
  }
}

PythonFullMatch::PythonFullMatch(const std::string& pattern) {
  initialize_oniguruma();
  // Anchored at the start by onig_match; the lookahead holds only at the very end, so backtracking
  // tries every alternative until one ends there (a plain match that stops at its first success
  // would say no to "a|ab" on "ab", where Python's fullmatch says yes).
  const std::string whole = "(?:" + pattern + ")(?![\\s\\S])";
  regex_t* compiled = nullptr;
  OnigErrorInfo info{};
  const auto* begin = reinterpret_cast<const OnigUChar*>(whole.data());
  int code =
      onig_new(&compiled, begin, begin + whole.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_PYTHON, &info);
  if (code != ONIG_NORMAL) throw std::invalid_argument(error_text(code, &info));
  regex_ = compiled;
}

PythonFullMatch::~PythonFullMatch() {
  if (regex_) onig_free(static_cast<regex_t*>(regex_));
}

bool PythonFullMatch::operator()(std::string_view text) const {
  const auto* start = reinterpret_cast<const OnigUChar*>(text.data());
  const auto found =
      onig_match(static_cast<regex_t*>(regex_), start, start + text.size(), start, nullptr, ONIG_OPTION_NONE);
  if (found == ONIG_MISMATCH) return false;
  if (found < 0) throw std::runtime_error("regex match failed: " + error_text(static_cast<int>(found), nullptr));
  return true;
}

}  // namespace lrhost::text
