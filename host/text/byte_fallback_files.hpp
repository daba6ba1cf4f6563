// The parts of tokenizer.json and tokenizer_config.json that only the byte-fallback family (Gemma,
// PaliGemma) reads: the check of a file-declared pipeline (normalizer, pre-tokenizer, decoder) and the
// post-processor's special tokens, read from TemplateProcessing or rebuilt as transformers does.
#pragma once
#include <cstdint>
#include <vector>

#include "host/text/added_vocabulary.hpp"
#include "host/text/bpe_model.hpp"
#include "host/text/json_file.hpp"
#include "host/text/tokenizer.hpp"

namespace lrhost::text::detail {

// tokenizer.json's model.byte_fallback is true: the file declares the byte-fallback family.
bool declares_byte_fallback(const JsonFile& file);

// For a file run as it is: the normalizer must be Replace(" ", "▁") (alone or the only step of a Sequence),
// the pre-tokenizer absent or Split(" ", MergedWithPrevious) (a no-op once spaces are '▁'), the decoder
// absent or made of Replace, ByteFallback, Fuse, Strip. Anything else is an error naming the key.
void check_byte_fallback_pipeline(const JsonFile& file);

// The ids TemplateProcessing's single template puts before and after the text ($A), from its special_tokens
// table; nothing for a null post-processor. Other post-processors are an error naming the key.
void read_template(const JsonFile& file, const json& node, std::vector<std::int32_t>& prefix,
                   std::vector<std::int32_t>& suffix);

// transformers' update_post_processor: "<bos> $A <eos>" with each part only when add_bos_token /
// add_eos_token (default false) and the token set. A token that is neither added nor in the vocabulary is an
// error naming tokenizer_config.json.
void rebuild_template(const std::filesystem::path& config_path, const TokenizerSettings& settings,
                      const AddedVocabulary& added, const BpeModel& model, std::vector<std::int32_t>& prefix,
                      std::vector<std::int32_t>& suffix);

}  // namespace lrhost::text::detail
