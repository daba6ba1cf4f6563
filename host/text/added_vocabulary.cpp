// Added-token matching; see added_vocabulary.hpp.
#include "host/text/added_vocabulary.hpp"

#include <algorithm>

namespace lrhost::text {

void AddedVocabulary::add(AddedToken token) {
  if (token.content.empty()) return;  // an empty token can never match
  if (token.pattern.empty()) token.pattern = token.content;
  std::size_t index = tokens_.size();
  by_content_[token.content] = index;
  by_id_[token.id] = index;
  Matcher& matcher = token.normalized ? normalized_ : raw_;
  auto& bucket = matcher.by_first_byte[static_cast<unsigned char>(token.pattern.front())];
  tokens_.push_back(std::move(token));
  bucket.push_back(index);
  std::stable_sort(bucket.begin(), bucket.end(),
                   [&](std::size_t a, std::size_t b) { return tokens_[a].pattern.size() > tokens_[b].pattern.size(); });
  matcher.empty = false;
}

void AddedVocabulary::split_with(const Matcher& matcher, std::string_view text, std::vector<Segment>& segments) const {
  if (matcher.empty) {
    if (!text.empty()) segments.push_back({text, -1});
    return;
  }
  std::size_t start = 0;  // first byte not yet emitted
  std::size_t i = 0;
  while (i < text.size()) {
    const auto& bucket = matcher.by_first_byte[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (std::size_t index : bucket) {  // longest first: the first that matches is the longest
      const std::string& pattern = tokens_[index].pattern;
      if (text.compare(i, pattern.size(), pattern) == 0) {
        hit = &tokens_[index];
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    if (i > start) segments.push_back({text.substr(start, i - start), -1});
    segments.push_back({text.substr(i, hit->pattern.size()), hit->id});
    i += hit->pattern.size();
    start = i;
  }
  if (start < text.size()) segments.push_back({text.substr(start), -1});
}

void AddedVocabulary::split(std::string_view text, std::vector<Segment>& segments) const {
  segments.clear();
  if (raw_.empty) {
    if (!text.empty()) segments.push_back({text, -1});
  } else {
    split_with(raw_, text, segments);
  }
  if (normalized_.empty) return;
  std::vector<Segment> first_pass;
  first_pass.swap(segments);
  for (const Segment& segment : first_pass) {
    if (segment.id >= 0)
      segments.push_back(segment);
    else
      split_with(normalized_, segment.text, segments);
  }
}

std::optional<std::int32_t> AddedVocabulary::id_of(std::string_view content) const {
  auto found = by_content_.find(std::string(content));
  if (found == by_content_.end()) return std::nullopt;
  return tokens_[found->second].id;
}

const AddedToken* AddedVocabulary::token_of(std::int32_t id) const {
  auto found = by_id_.find(id);
  return found == by_id_.end() ? nullptr : &tokens_[found->second];
}

}  // namespace lrhost::text
