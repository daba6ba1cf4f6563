// BPE merging; see bpe_model.hpp.
#include "host/text/bpe_model.hpp"

#include <limits>
#include <stdexcept>

#include "host/text/utf8.hpp"

namespace lrhost::text {

BpeModel::BpeModel(std::unordered_map<std::string, std::int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges) {
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

void BpeModel::merge_word(std::string_view word, std::vector<std::int32_t>& symbols) const {
  symbols.clear();
  if (ignore_merges_) {
    if (auto whole = vocab_.find(std::string(word)); whole != vocab_.end()) {
      symbols.push_back(whole->second);
      return;
    }
  }
  std::string character;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t length = utf8_sequence_length(static_cast<unsigned char>(word[i]));
    character.assign(word.substr(i, length));
    auto found = vocab_.find(character);
    if (found == vocab_.end())
      throw std::invalid_argument("token '" + character + "' (in pre-token '" + std::string(word) +
                                  "') is not in the vocabulary, and byte-level BPE has no unknown token");
    symbols.push_back(found->second);
    i += length;
  }
  // Repeatedly apply the lowest-ranked merge among adjacent pairs (leftmost on ties). Words are short and
  // cached, so a scan per merge is cheaper than a heap.
  while (symbols.size() > 1) {
    std::int32_t best_rank = std::numeric_limits<std::int32_t>::max(), best_id = -1;
    std::size_t best_position = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto found = merges_.find(pair_key(symbols[i], symbols[i + 1]));
      if (found != merges_.end() && found->second.rank < best_rank) {
        best_rank = found->second.rank;
        best_id = found->second.merged_id;
        best_position = i;
      }
    }
    if (best_id < 0) break;
    symbols[best_position] = best_id;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_position) + 1);
  }
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
