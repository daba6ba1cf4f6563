// Encoding, batching and decoding; see tokenizer.hpp (loading is in tokenizer_files.cpp).
#include "host/text/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "host/text/byte_fallback.hpp"
#include "host/text/byte_level.hpp"
#include "host/text/nfc.hpp"
#include "host/text/utf8.hpp"
#include "host/util/error.hpp"

namespace lrhost::text {

Tokenizer::Tokenizer(Parts parts)
    : folder_(std::move(parts.folder)),
      model_(std::move(parts.model)),
      pre_tokenizer_(std::move(parts.pre_tokenizer)),
      added_(std::move(parts.added)),
      byte_level_decoder_(parts.byte_level_decoder),
      nfc_(parts.nfc),
      family_(parts.family),
      prefix_ids_(std::move(parts.prefix_ids)),
      suffix_ids_(std::move(parts.suffix_ids)),
      settings_(std::move(parts.settings)),
      pipeline_note_(std::move(parts.pipeline_note)) {
  for (const auto& [token, id] : model_->vocab()) {
    if (id < 0) continue;
    if (static_cast<std::size_t>(id) >= id_to_token_.size()) id_to_token_.resize(static_cast<std::size_t>(id) + 1);
    id_to_token_[static_cast<std::size_t>(id)] = token;
  }
}

void Tokenizer::encode_into(std::string_view text, std::vector<std::int32_t>& ids) const {
  if (auto bad = find_invalid_utf8(text))
    throw util::DataError(fmt::format("tokenizer: the text is not valid UTF-8 (byte {} of {})", *bad, text.size()));
  thread_local std::vector<Segment> segments, raw_segments;
  thread_local PreTokenizer::Pieces pieces;
  thread_local std::string normalized;
  auto run_model = [&](std::string_view piece) {
    try {
      model_->tokenize(piece, ids);
    } catch (const std::invalid_argument& error) {
      throw util::DataError(fmt::format("{}: {}", (folder_ / "tokenizer.json").string(), error.what()));
    }
  };
  if (family_ == Family::byte_fallback) {
    // Added tokens with normalized=false are found in the raw text; the rest is normalized (' ' -> '▁') and
    // searched for normalized=true tokens. No pre-tokenizer splits what remains: each text segment is one
    // BPE word. The normalized text lives in one buffer, filled before any view of it is taken.
    raw_segments.clear();
    added_.split_unnormalized(text, raw_segments);
    normalized.clear();
    for (const Segment& segment : raw_segments)
      if (segment.id < 0) append_metaspace_normalized(normalized, segment.text);
    std::size_t offset = 0;
    for (const Segment& segment : raw_segments) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        continue;
      }
      std::size_t length =
          segment.text.size() + 2 * static_cast<std::size_t>(std::count(segment.text.begin(), segment.text.end(), ' '));
      segments.clear();
      added_.split_normalized(std::string_view(normalized).substr(offset, length), segments);
      offset += length;
      for (const Segment& piece : segments) {
        if (piece.id >= 0)
          ids.push_back(piece.id);
        else
          run_model(piece.text);
      }
    }
    return;
  }
  auto run_text = [&](std::string_view piece_text) {
    pre_tokenizer_->run(piece_text, pieces);
    for (std::size_t i = 0; i < pieces.size(); ++i) run_model(pieces[i]);
  };
  if (nfc_) {
    // As Hugging Face tokenizers does: normalized=false tokens are found in the raw text, each text segment
    // between them is normalized on its own (a combining mark right after a special token stays as it is),
    // and normalized=true tokens are found in the normalized segments. Views are taken once the buffer is full.
    raw_segments.clear();
    added_.split_unnormalized(text, raw_segments);
    normalized.clear();
    thread_local std::vector<std::size_t> ends;
    ends.clear();
    for (const Segment& segment : raw_segments) {
      if (segment.id < 0) append_nfc(normalized, segment.text);
      ends.push_back(normalized.size());
    }
    std::size_t begin = 0;
    for (std::size_t i = 0; i < raw_segments.size(); ++i) {
      if (raw_segments[i].id >= 0) {
        ids.push_back(raw_segments[i].id);
        continue;
      }
      segments.clear();
      added_.split_normalized(std::string_view(normalized).substr(begin, ends[i] - begin), segments);
      begin = ends[i];
      for (const Segment& piece : segments) {
        if (piece.id >= 0)
          ids.push_back(piece.id);
        else
          run_text(piece.text);
      }
    }
    return;
  }
  added_.split(text, segments);
  for (const Segment& segment : segments) {
    if (segment.id >= 0)
      ids.push_back(segment.id);
    else
      run_text(segment.text);
  }
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  encode_into(text, ids);
  return ids;
}

std::vector<Encoding> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                              const BatchOptions& options) const {
  std::optional<std::size_t> max_length = options.max_length;
  bool needs_length = options.truncation || options.padding == Padding::max_length;
  if (needs_length && !max_length && settings_.model_max_length)
    max_length = static_cast<std::size_t>(*settings_.model_max_length);
  if (needs_length && !max_length)
    throw util::ConfigError(fmt::format("tokenizer: {} needs a max_length, and {} has no model_max_length",
                                        options.truncation ? "truncation" : "padding to max_length",
                                        (folder_ / "tokenizer_config.json").string()));
  if (needs_length && *max_length == 0) throw util::ConfigError("tokenizer: max_length must be positive");
  Side truncation_side = options.truncation_side.value_or(settings_.truncation_side);
  Side padding_side = options.padding_side.value_or(settings_.padding_side);
  // Truncation leaves room for the post-processor's tokens (Hugging Face tokenizers' TruncationParams:
  // max_length counts them), so a truncated Gemma text keeps max_length - 1 tokens after <bos>.
  std::size_t added_count = prefix_ids_.size() + suffix_ids_.size();
  if (options.truncation && *max_length < added_count)
    throw util::ConfigError(
        fmt::format("tokenizer: max_length {} is shorter than the {} special tokens the "
                    "post-processor of {} adds",
                    *max_length, added_count, (folder_ / "tokenizer.json").string()));

  std::vector<Encoding> batch(texts.size());
  std::size_t longest = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto& ids = batch[i].ids;
    encode_into(texts[i], ids);
    std::size_t keep = options.truncation ? *max_length - added_count : ids.size();
    if (ids.size() > keep) {
      // Left truncation keeps the end of the text (the setting of SmolVLM2's tokenizer_config.json).
      if (truncation_side == Side::left)
        ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
      else
        ids.resize(keep);
    }
    ids.insert(ids.begin(), prefix_ids_.begin(), prefix_ids_.end());
    ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
    batch[i].attention_mask.assign(ids.size(), 1);
    longest = std::max(longest, ids.size());
  }
  if (options.padding == Padding::none) return batch;
  std::size_t target = options.padding == Padding::longest ? longest : *max_length;
  bool any_short = std::any_of(batch.begin(), batch.end(), [&](const Encoding& e) { return e.ids.size() < target; });
  if (!any_short) return batch;
  if (!settings_.pad_id)
    throw util::ConfigError(fmt::format("tokenizer: padding needs a pad token, and {} sets no pad_token",
                                        (folder_ / "tokenizer_config.json").string()),
                            "add \"pad_token\" to tokenizer_config.json (SmolVLM2 uses \"<|im_end|>\")");
  for (Encoding& encoding : batch) {
    std::size_t missing = target > encoding.ids.size() ? target - encoding.ids.size() : 0;
    auto ids_at = padding_side == Side::left ? encoding.ids.begin() : encoding.ids.end();
    encoding.ids.insert(ids_at, missing, *settings_.pad_id);
    auto mask_at = padding_side == Side::left ? encoding.attention_mask.begin() : encoding.attention_mask.end();
    encoding.attention_mask.insert(mask_at, missing, 0);
  }
  return batch;
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out, pending;  // pending: model tokens not yet run through the decoder
  bool first = true;
  auto flush = [&] {
    out += byte_level_decoder_ ? byte_level_decode(pending) : pending;
    pending.clear();
  };
  bool metaspace_decoder = family_ == Family::byte_fallback;
  for (std::int32_t id : ids) {
    if (const AddedToken* added = added_.token_of(id)) {
      flush();
      out += added->content;
    } else if (id >= 0 && static_cast<std::size_t>(id) < id_to_token_.size() && !id_to_token_[id].empty()) {
      const std::string& token = id_to_token_[static_cast<std::size_t>(id)];
      if (metaspace_decoder) {
        append_metaspace_decoded(pending, token);
      } else {
        // Without a decoder Hugging Face joins the tokens with spaces.
        if (!byte_level_decoder_ && !first) pending += ' ';
        pending += token;
      }
    } else {
      throw util::DataError(
          fmt::format("tokenizer: id {} is not in the vocabulary of {}", id, (folder_ / "tokenizer.json").string()));
    }
    first = false;
  }
  flush();
  return out;
}

std::optional<std::int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = added_.id_of(token)) return id;
  auto found = model_->vocab().find(std::string(token));
  if (found == model_->vocab().end()) return std::nullopt;
  return found->second;
}

std::size_t Tokenizer::vocab_size() const {
  std::size_t size = model_->vocab().size();
  for (const AddedToken& token : added_.tokens())
    if (!model_->vocab().count(token.content)) ++size;
  return size;
}

std::string Tokenizer::describe() const {
  std::size_t special = std::count_if(added_.tokens().begin(), added_.tokens().end(),
                                      [](const AddedToken& token) { return token.special; });
  return fmt::format(
      "{}: BPE, {} tokens, {} merges, {} added tokens ({} special); {}{}; {} special tokens added; pad {}; "
      "truncation {}, padding {}",
      folder_.string(), vocab_size(), model_->merge_count(), added_.tokens().size(), special,
      family_ == Family::byte_fallback
          ? std::string("byte fallback, normalizer Replace(' ', U+2581), one word between added tokens")
          : (nfc_ ? "normalizer NFC, " : "") + ("pre-tokenizer " + pre_tokenizer_->describe()),
      pipeline_note_.empty() ? "" : " (" + pipeline_note_ + ")", prefix_ids_.size() + suffix_ids_.size(),
      settings_.pad_token ? fmt::format("'{}' = {}", *settings_.pad_token, settings_.pad_id.value_or(-1)) : "none",
      settings_.truncation_side == Side::left ? "left" : "right",
      settings_.padding_side == Side::left ? "left" : "right");
}

}  // namespace lrhost::text
