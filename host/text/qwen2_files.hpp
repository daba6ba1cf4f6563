// What transformers 5's Qwen2Tokenizer (models/qwen2/tokenization_qwen2.py; GR00T N1.7's backbone tokenizer)
// installs in code when AutoTokenizer loads a folder whose tokenizer_config.json names it: the pre-tokenizer
// (Split by Qwen2's regex, then ByteLevel without its own regex), the class's default special tokens, and the
// added tokens as transformers registers them on a fresh backend. tokenizer_files.cpp adds the rest (NFC
// normalizer, BPE from vocab and merges alone, ByteLevel decoder, post-processor).
#pragma once
#include <filesystem>

#include "host/text/added_vocabulary.hpp"
#include "host/text/bpe_model.hpp"
#include "host/text/json_file.hpp"
#include "host/text/pre_tokenizer.hpp"
#include "host/text/tokenizer.hpp"

namespace lrhost::text::detail {

// PRETOKENIZE_REGEX of tokenization_qwen2.py, byte for byte.
inline constexpr const char* qwen2_split_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The __init__ defaults (unk, eos and pad "<|endoftext|>", no bos) for the keys tokenizer_config.json lacks; a
// key given as null keeps its null, as a keyword argument None does.
void apply_qwen2_defaults(TokenizerSettings& settings);

// Split(qwen2_split_pattern, Isolated) -> ByteLevel(add_prefix_space, use_regex=false).
void add_qwen2_pre_tokenizer(bool add_prefix_space, PreTokenizer& pre_tokenizer);

// Refuses what would make transformers tokenize otherwise and lrhost does not implement: split_special_tokens or
// fix_mistral_regex true in tokenizer_config.json, a padding or truncation block in tokenizer.json (transformers
// turns them into defaults of the call).
void check_qwen2_files(const JsonFile& tokenizer_json, const std::filesystem::path& config_path);

// The added tokens of the rebuilt backend, in transformers' order: tokenizer_config.json's added_tokens_decoder
// when it has one, else tokenizer.json's added_tokens (by id); then the named special tokens and
// extra_special_tokens not among them; then Qwen2Tokenizer's own add_tokens of every special token (special,
// not normalized). Each through tokenizers' add_tokens: the id is the token's vocabulary id, or the next after
// the largest added id (at least the vocabulary size), so the ids written in the files are not trusted; a
// token added again with other flags takes the new flags. Normalized tokens are matched in NFC.
AddedVocabulary read_qwen2_added_tokens(const JsonFile& tokenizer_json, const std::filesystem::path& config_path,
                                        const TokenizerSettings& settings, const BpeModel& model);

}  // namespace lrhost::text::detail
