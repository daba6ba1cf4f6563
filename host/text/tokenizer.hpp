// A Hugging Face BPE tokenizer, loaded from a folder with tokenizer.json and tokenizer_config.json, of one of
// two families: byte-level (GPT-2, SmolLM2, SmolVLM2; Qwen2 with its NFC normalizer) or SentencePiece-style with byte
// fallback (Gemma, PaliGemma: spaces as '▁', the whole text between added tokens one BPE word, <0xXX> byte tokens,
// <bos> added in front). Encodes one text, encodes a batch with special tokens, truncation, padding and attention masks
// as transformers' AutoTokenizer does, and decodes for diagnostics. Whatever the files use that this class does not
// implement is an error at load time (tokenizer_files.cpp), never a silently different tokenization. See
// docs/tokenizer.md.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "host/text/added_vocabulary.hpp"
#include "host/text/bpe_model.hpp"
#include "host/text/pre_tokenizer.hpp"

namespace lrhost::text {

enum class Side { left, right };
enum class Padding { none, longest, max_length };

// Which pipeline the tokenizer runs. transformers (the default): what transformers 5 AutoTokenizer builds,
// which is what LeRobot feeds its models — for tokenizer_class GPT2Tokenizer it keeps only vocab, merges,
// added tokens and post-processor of tokenizer.json and installs its own ByteLevel pre-tokenizer (no
// Digits split, no normalizer); for GemmaTokenizer and Qwen2Tokenizer (GR00T N1.7's backbone) it rebuilds
// normalizer, pre-tokenizer, decoder and model options in code. file: tokenizer.json verbatim, as
// `tokenizers.Tokenizer.from_file` runs it.
enum class PipelineSource { transformers, file };

// The two families (how load() tells them apart: tokenizer_files.cpp, choose_family).
enum class Family { byte_level, byte_fallback };

// What tokenizer_config.json says (defaults as in transformers when a key or the file is absent).
struct TokenizerSettings {
  std::string tokenizer_class;           // empty when not given
  std::optional<std::string> pad_token;  // content of pad_token
  std::optional<std::int32_t> pad_id;    // its id
  Side truncation_side = Side::right;
  Side padding_side = Side::right;
  std::optional<std::int64_t> model_max_length;  // absent for transformers' "very large" placeholder
  bool add_prefix_space = false;
  // Special tokens and the flags that make transformers rebuild the post-processor (only when given).
  std::optional<std::string> bos_token, eos_token, unk_token, mask_token;
  std::optional<bool> add_bos_token, add_eos_token;
  bool padding_side_given = false;
  std::set<std::string> keys;  // every key tokenizer_config.json has, null or not (a class default yields to any)
};

struct BatchOptions {
  std::optional<std::size_t> max_length;  // default: model_max_length when truncating or padding to it
  bool truncation = false;
  Padding padding = Padding::none;
  std::optional<Side> padding_side;  // overrides the config (LeRobot passes padding_side="right")
  std::optional<Side> truncation_side;
};

struct Encoding {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> attention_mask;  // 1 on tokens, 0 on padding
};

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json. Throws util::IoError for a
  // missing folder or file and util::DataError naming the file, the JSON key and the value otherwise.
  static Tokenizer load(const std::filesystem::path& dir, PipelineSource source = PipelineSource::transformers);

  // Token ids of one text (no truncation, no padding; no tokens added around it). Throws util::DataError
  // for text that is not valid UTF-8 or a piece with a character the vocabulary lacks (byte-level only).
  std::vector<std::int32_t> encode(std::string_view text) const;
  // With the post-processor's special tokens (Gemma: <bos> first); truncation counts them, as in
  // Hugging Face tokenizers: the text keeps max_length minus their number.
  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts, const BatchOptions& options) const;
  // The family's decoder over the tokens (added tokens as their content). Throws on an unknown id.
  std::string decode(const std::vector<std::int32_t>& ids) const;

  std::optional<std::int32_t> token_to_id(std::string_view token) const;
  const TokenizerSettings& settings() const { return settings_; }
  const PreTokenizer& pre_tokenizer() const { return *pre_tokenizer_; }
  std::size_t vocab_size() const;  // model vocabulary plus added tokens outside it
  Family family() const { return family_; }
  // Ids the post-processor puts around every text (TemplateProcessing's single template).
  const std::vector<std::int32_t>& prefix_ids() const { return prefix_ids_; }
  const std::vector<std::int32_t>& suffix_ids() const { return suffix_ids_; }
  std::string describe() const;  // one line: files, model, pipeline, added tokens, config

  // Assembled by tokenizer_files.cpp.
  struct Parts {
    std::filesystem::path folder;
    std::shared_ptr<const BpeModel> model;
    std::shared_ptr<const PreTokenizer> pre_tokenizer;
    AddedVocabulary added;
    bool byte_level_decoder = true;
    bool nfc = false;  // byte-level family: the NFC normalizer runs before the pre-tokenizer
    Family family = Family::byte_level;
    std::vector<std::int32_t> prefix_ids, suffix_ids;
    TokenizerSettings settings;
    std::string pipeline_note;  // how the pipeline was chosen (for describe())
  };
  explicit Tokenizer(Parts parts);

 private:
  void encode_into(std::string_view text, std::vector<std::int32_t>& ids) const;

  std::filesystem::path folder_;
  std::shared_ptr<const BpeModel> model_;
  std::shared_ptr<const PreTokenizer> pre_tokenizer_;
  AddedVocabulary added_;
  bool byte_level_decoder_ = true;
  bool nfc_ = false;
  Family family_ = Family::byte_level;
  std::vector<std::int32_t> prefix_ids_, suffix_ids_;
  TokenizerSettings settings_;
  std::string pipeline_note_;
  std::vector<std::string> id_to_token_;  // model vocabulary by id
};

}  // namespace lrhost::text
