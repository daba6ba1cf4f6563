// Pre-tokenizer steps; see pre_tokenizer.hpp.
#include "host/text/pre_tokenizer.hpp"

#include <utility>

#include "host/text/byte_level.hpp"

namespace lrhost::text {
namespace {

using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

// The Isolated split of buffer[begin, end): every match and every stretch between matches becomes a range,
// empty ones dropped.
void split_isolated(const UnicodeRegex& regex, std::string_view buffer, std::size_t begin, std::size_t end,
                    Ranges& matches, Ranges& out) {
  matches.clear();
  regex.find_all(buffer.substr(begin, end - begin), matches);
  std::size_t previous = begin;
  for (const auto& [match_begin, match_end] : matches) {
    if (begin + match_begin > previous) out.emplace_back(previous, begin + match_begin);
    if (match_end > match_begin) out.emplace_back(begin + match_begin, begin + match_end);
    previous = begin + match_end;
  }
  if (previous < end) out.emplace_back(previous, end);
}

std::shared_ptr<const UnicodeRegex> shared_regex(const std::string& pattern) {
  return std::make_shared<const UnicodeRegex>(pattern);
}

}  // namespace

void PreTokenizer::add_digits(bool individual_digits) {
  steps_.push_back(
      {Kind::digits, individual_digits, false, shared_regex(individual_digits ? R"(\p{N})" : R"(\p{N}+)")});
}

void PreTokenizer::add_byte_level(bool add_prefix_space, bool use_regex) {
  steps_.push_back(
      {Kind::byte_level, add_prefix_space, use_regex, use_regex ? shared_regex(gpt2_split_pattern) : nullptr});
}

void PreTokenizer::add_split(const std::string& pattern) {
  steps_.push_back({Kind::split, false, false, shared_regex(pattern)});
}

void PreTokenizer::run(std::string_view text, Pieces& pieces) const {
  pieces.buffer.assign(text);
  pieces.ranges.clear();
  if (text.empty()) return;
  pieces.ranges.emplace_back(0, text.size());
  for (const Step& step : steps_) {
    // A prefix space changes the bytes: copy every piece into a new buffer, with " " where one is missing.
    if (step.kind == Kind::byte_level && step.flag_a) {
      pieces.scratch.clear();
      pieces.next_ranges.clear();
      for (const auto& [begin, end] : pieces.ranges) {
        std::size_t start = pieces.scratch.size();
        if (pieces.buffer[begin] != ' ') pieces.scratch.push_back(' ');
        pieces.scratch.append(pieces.buffer, begin, end - begin);
        pieces.next_ranges.emplace_back(start, pieces.scratch.size());
      }
      pieces.buffer.swap(pieces.scratch);
      pieces.ranges.swap(pieces.next_ranges);
    }
    if (step.regex) {
      pieces.next_ranges.clear();
      for (const auto& [begin, end] : pieces.ranges)
        split_isolated(*step.regex, pieces.buffer, begin, end, pieces.matches, pieces.next_ranges);
      pieces.ranges.swap(pieces.next_ranges);
    }
    if (step.kind == Kind::byte_level) {
      pieces.scratch.clear();
      pieces.next_ranges.clear();
      for (const auto& [begin, end] : pieces.ranges) {
        std::size_t start = pieces.scratch.size();
        append_byte_level(pieces.scratch, std::string_view(pieces.buffer).substr(begin, end - begin));
        pieces.next_ranges.emplace_back(start, pieces.scratch.size());
      }
      pieces.buffer.swap(pieces.scratch);
      pieces.ranges.swap(pieces.next_ranges);
    }
  }
}

std::string PreTokenizer::describe() const {
  std::string text;
  for (const Step& step : steps_) {
    if (!text.empty()) text += " -> ";
    switch (step.kind) {
      case Kind::digits:
        text += std::string("Digits(individual_digits=") + (step.flag_a ? "true" : "false") + ")";
        break;
      case Kind::byte_level:
        text += std::string("ByteLevel(add_prefix_space=") + (step.flag_a ? "true" : "false") +
                ", use_regex=" + (step.flag_b ? "true" : "false") + ")";
        break;
      case Kind::split:
        text += "Split(" + step.regex->pattern() + ", Isolated)";
        break;
    }
  }
  return text.empty() ? "none" : text;
}

}  // namespace lrhost::text
