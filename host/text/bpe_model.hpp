// The BPE model of a byte-level tokenizer.json: vocabulary, merges by rank, and the per-word merge loop with
// a cache of finished words (as Hugging Face `tokenizers` keeps one), so that frequent words cost one lookup.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lrhost::text {

class BpeModel {
 public:
  // `merges` in rank order (rank 0 first) as (left, right) token strings. Throws std::invalid_argument naming
  // the merge when a side or the merged token is missing from the vocabulary.
  BpeModel(std::unordered_map<std::string, std::int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges);

  // Appends the ids of one pre-token (already in the model's alphabet) to `ids`: its characters, merged by
  // lowest rank first (leftmost on ties) until no listed merge applies. Throws std::invalid_argument naming
  // the token when a character is missing from the vocabulary (byte-level BPE has no unknown token).
  void tokenize(std::string_view word, std::vector<std::int32_t>& ids) const;

  const std::unordered_map<std::string, std::int32_t>& vocab() const { return vocab_; }
  std::size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    std::int32_t rank;
    std::int32_t merged_id;
  };
  static std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }
  void merge_word(std::string_view word, std::vector<std::int32_t>& symbols) const;

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
  // Finished words; capped so that a long-running process with unbounded input keeps bounded memory.
  static constexpr std::size_t max_cached_words = 100000;
  static constexpr std::size_t max_cached_word_bytes = 256;
  // Looked up by string_view, without building a key string per word.
  struct WordHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view word) const { return std::hash<std::string_view>{}(word); }
  };
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>, WordHash, std::equal_to<>> cache_;
};

}  // namespace lrhost::text
