// Pre-tokenizer steps; see pre_tokenizer.hpp.
#include "host/text/pre_tokenizer.hpp"

#include <utility>

#include "host/text/byte_level.hpp"

namespace lrhost::text {
namespace {

using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

// The Isolated split: every match and every stretch between matches becomes a piece, empty ones dropped.
void split_isolated(const UnicodeRegex& regex, std::string_view piece, Ranges& matches, std::vector<std::string>& out) {
  matches.clear();
  regex.find_all(piece, matches);
  std::size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > previous) out.emplace_back(piece.substr(previous, begin - previous));
    if (end > begin) out.emplace_back(piece.substr(begin, end - begin));
    previous = end;
  }
  if (previous < piece.size()) out.emplace_back(piece.substr(previous));
}

std::shared_ptr<const UnicodeRegex> shared_regex(const std::string& pattern) {
  return std::make_shared<const UnicodeRegex>(pattern);
}

}  // namespace

void PreTokenizer::add_digits(bool individual_digits) {
  steps_.push_back({Kind::digits, individual_digits, false, shared_regex(individual_digits ? R"(\p{N})" : R"(\p{N}+)")});
}

void PreTokenizer::add_byte_level(bool add_prefix_space, bool use_regex) {
  steps_.push_back({Kind::byte_level, add_prefix_space, use_regex, use_regex ? shared_regex(gpt2_split_pattern) : nullptr});
}

void PreTokenizer::add_split(const std::string& pattern) { steps_.push_back({Kind::split, false, false, shared_regex(pattern)}); }

void PreTokenizer::run(std::string_view text, std::vector<std::string>& pieces) const {
  pieces.clear();
  if (text.empty()) return;
  pieces.emplace_back(text);
  std::vector<std::string> next;
  Ranges matches;
  std::string prefixed;
  for (const Step& step : steps_) {
    next.clear();
    for (const std::string& piece : pieces) {
      std::string_view view = piece;
      if (step.kind == Kind::byte_level && step.flag_a && view.front() != ' ') {
        prefixed.clear();
        prefixed.push_back(' ');
        prefixed.append(view);
        view = prefixed;
      }
      if (step.regex) split_isolated(*step.regex, view, matches, next);
      else next.emplace_back(view);
    }
    if (step.kind == Kind::byte_level) {
      for (std::string& piece : next) {
        std::string mapped;
        mapped.reserve(piece.size() * 2);
        append_byte_level(mapped, piece);
        piece = std::move(mapped);
      }
    }
    pieces.swap(next);
  }
}

std::string PreTokenizer::describe() const {
  std::string text;
  for (const Step& step : steps_) {
    if (!text.empty()) text += " -> ";
    switch (step.kind) {
      case Kind::digits: text += std::string("Digits(individual_digits=") + (step.flag_a ? "true" : "false") + ")"; break;
      case Kind::byte_level:
        text += std::string("ByteLevel(add_prefix_space=") + (step.flag_a ? "true" : "false") +
                ", use_regex=" + (step.flag_b ? "true" : "false") + ")";
        break;
      case Kind::split: text += "Split(" + step.regex->pattern() + ", Isolated)"; break;
    }
  }
  return text.empty() ? "none" : text;
}

}  // namespace lrhost::text
