// The BPE model of a tokenizer.json: vocabulary, merges by rank, and the per-word merge loop with a cache of
// finished words (as Hugging Face `tokenizers` keeps one), so that frequent words cost one lookup. Serves both
// families: byte-level (GPT-2, SmolLM2: every character is in the vocabulary) and SentencePiece-style BPE with
// byte fallback (Gemma: a character missing from the vocabulary becomes its <0xXX> byte tokens, else <unk>).
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lrhost::text {

// What the model does with a character that is not in the vocabulary (Hugging Face BPE's byte_fallback,
// unk_token and fuse_unk), and whether a whole word found in the vocabulary skips merging (ignore_merges).
struct BpeOptions {
  bool ignore_merges = false;
  bool byte_fallback = false;          // try the character's UTF-8 bytes as <0xXX> tokens first
  std::optional<std::int32_t> unk_id;  // then this id; without one an unknown character is an error
  bool fuse_unk = false;               // consecutive unknown characters become one <unk>
};

class BpeModel {
 public:
  // `merges` in rank order (rank 0 first) as (left, right) token strings. Throws std::invalid_argument naming
  // the merge when a side or the merged token is missing from the vocabulary.
  BpeModel(std::unordered_map<std::string, std::int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);
  BpeModel(std::unordered_map<std::string, std::int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges)
      : BpeModel(std::move(vocab), merges, BpeOptions{.ignore_merges = ignore_merges}) {}

  // Appends the ids of one pre-token (already in the model's alphabet) to `ids`: its characters, merged by
  // lowest rank first (leftmost on ties) until no listed merge applies. A character missing from the
  // vocabulary takes the fallback of the options; with none, throws std::invalid_argument naming it.
  void tokenize(std::string_view word, std::vector<std::int32_t>& ids) const;

  const std::unordered_map<std::string, std::int32_t>& vocab() const { return vocab_; }
  std::size_t merge_count() const { return merges_.size(); }
  const BpeOptions& options() const { return options_; }

 private:
  struct Merge {
    std::int32_t rank;
    std::int32_t merged_id;
  };
  static std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }
  void split_characters(std::string_view word, std::vector<std::int32_t>& symbols) const;
  void merge_word(std::string_view word, std::vector<std::int32_t>& symbols) const;

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  BpeOptions options_;
  std::array<std::int32_t, 256> byte_ids_{};  // id of <0xXX> per byte, -1 when absent (byte fallback only)
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
