// BPE merging; see bpe_model.hpp.
#include "host/text/bpe_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>

#include "host/text/utf8.hpp"

namespace lrhost::text {

BpeModel::BpeModel(std::unordered_map<std::string, std::int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : vocab_(std::move(vocab)), options_(options) {
  byte_ids_.fill(-1);
  if (options_.byte_fallback) {
    // Spelled as Hugging Face spells them: "<0x" and two upper-case hex digits.
    for (int byte = 0; byte < 256; ++byte)
      if (auto found = vocab_.find(fmt::format("<0x{:02X}>", byte)); found != vocab_.end())
        byte_ids_[static_cast<std::size_t>(byte)] = found->second;
  }
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto id_of = [&](const std::string& token, const char* what) {
      auto found = vocab_.find(token);
      if (found == vocab_.end())
        throw std::invalid_argument("merge #" + std::to_string(rank) + " '" + left + " " + right + "': " + what + " '" +
                                    token + "' is not in the vocabulary");
      return found->second;
    };
    std::int32_t left_id = id_of(left, "left token");
    std::int32_t right_id = id_of(right, "right token");
    std::int32_t merged_id = id_of(left + right, "merged token");
    // A pair listed twice takes its later rank: Hugging Face tokenizers collects the list into a map too.
    merges_.insert_or_assign(pair_key(left_id, right_id), Merge{static_cast<std::int32_t>(rank), merged_id});
  }
}

void BpeModel::split_characters(std::string_view word, std::vector<std::int32_t>& symbols) const {
  // An unknown character waits here while fusing, and is emitted when the next character found in the
  // vocabulary (or the end) comes. Byte-fallback tokens do not flush it, so "xé" with x unknown gives
  // <0xC3> <0xA9> <unk>: what Hugging Face tokenizers 0.22 emits, reproduced on purpose.
  std::optional<std::int32_t> pending_unk;
  std::string character;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t length = std::min(utf8_sequence_length(static_cast<unsigned char>(word[i])), word.size() - i);
    character.assign(word.substr(i, length));
    i += length;
    if (auto found = vocab_.find(character); found != vocab_.end()) {
      if (pending_unk) symbols.push_back(*std::exchange(pending_unk, std::nullopt));
      symbols.push_back(found->second);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (char byte : character) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(byte)] >= 0;
      if (all_bytes) {
        for (char byte : character) symbols.push_back(byte_ids_[static_cast<unsigned char>(byte)]);
        continue;
      }
    }
    if (!options_.unk_id)
      throw std::invalid_argument("token '" + character + "' (in pre-token '" + std::string(word) +
                                  "') is not in the vocabulary, and the model has no unknown token");
    if (pending_unk && !options_.fuse_unk) symbols.push_back(*pending_unk);
    pending_unk = options_.unk_id;
  }
  if (pending_unk) symbols.push_back(*pending_unk);
}

void BpeModel::merge_word(std::string_view word, std::vector<std::int32_t>& symbols) const {
  symbols.clear();
  if (options_.ignore_merges) {
    if (auto whole = vocab_.find(std::string(word)); whole != vocab_.end()) {
      symbols.push_back(whole->second);
      return;
    }
  }
  split_characters(word, symbols);
  if (symbols.size() < 2) return;
  // Lowest rank first, leftmost on ties, as Hugging Face's Word::merge_all: candidate pairs wait in a min-heap
  // keyed by (rank, position of the left symbol); symbols form a linked list so a merge is O(log n). Whole
  // texts are one word for Gemma-style tokenizers, so a rescan per merge (quadratic) would dominate.
  struct Candidate {
    std::int32_t rank;
    std::uint32_t position;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  thread_local std::vector<std::uint32_t> next, previous;
  const std::uint32_t count = static_cast<std::uint32_t>(symbols.size());
  next.resize(count);
  previous.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    next[i] = i + 1 < count ? i + 1 : none;
    previous[i] = i > 0 ? i - 1 : none;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](std::uint32_t left) {
    if (left == none || next[left] == none) return;
    auto found = merges_.find(pair_key(symbols[left], symbols[next[left]]));
    if (found != merges_.end()) heap.push({found->second.rank, left});
  };
  for (std::uint32_t i = 0; i + 1 < count; ++i) consider(i);
  std::vector<bool> removed(count, false);
  while (!heap.empty()) {
    Candidate top = heap.top();
    heap.pop();
    std::uint32_t left = top.position;
    if (removed[left] || next[left] == none) continue;
    // Stale when either symbol changed since the candidate was pushed: the pair's rank tells.
    auto found = merges_.find(pair_key(symbols[left], symbols[next[left]]));
    if (found == merges_.end() || found->second.rank != top.rank) continue;
    std::uint32_t right = next[left];
    symbols[left] = found->second.merged_id;
    removed[right] = true;
    next[left] = next[right];
    if (next[right] != none) previous[next[right]] = left;
    consider(previous[left]);
    consider(left);
  }
  std::size_t kept = 0;
  for (std::uint32_t i = 0; i < count; ++i)
    if (!removed[i]) symbols[kept++] = symbols[i];
  symbols.resize(kept);
}

void BpeModel::tokenize(std::string_view word, std::vector<std::int32_t>& ids) const {
  if (word.empty()) return;
  bool cacheable = word.size() <= max_cached_word_bytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (auto found = cache_.find(word); found != cache_.end()) {
      ids.insert(ids.end(), found->second.begin(), found->second.end());
      return;
    }
  }
  std::vector<std::int32_t> symbols;
  merge_word(word, symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < max_cached_words) cache_.emplace(std::string(word), std::move(symbols));
  }
}

}  // namespace lrhost::text
