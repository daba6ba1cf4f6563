// GR00T's chat prompt and its left-padded token ids; see groot_prompt.hpp.
#include "host/policy/groot/groot_prompt.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy::groot {
namespace {

std::int32_t special_id(const text::Tokenizer& tokenizer, const char* token, const std::filesystem::path& dir) {
  auto id = tokenizer.token_to_id(token);
  if (!id)
    throw util::DataError(dir.string() + ": the tokenizer has no '" + std::string(token) +
                          "' token (GR00T's prompt needs Qwen's chat and vision tokens)");
  return *id;
}

}  // namespace

GrootPromptEncoder::GrootPromptEncoder(const std::filesystem::path& tokenizer_dir)
    : tokenizer_(text::Tokenizer::load(tokenizer_dir)) {
  special_id(tokenizer_, "<|im_start|>", tokenizer_dir);
  special_id(tokenizer_, "<|im_end|>", tokenizer_dir);
  vision_start_ = special_id(tokenizer_, "<|vision_start|>", tokenizer_dir);
  vision_end_ = special_id(tokenizer_, "<|vision_end|>", tokenizer_dir);
  image_pad_ = special_id(tokenizer_, "<|image_pad|>", tokenizer_dir);
  if (!tokenizer_.settings().pad_id)
    throw util::DataError((tokenizer_dir / "tokenizer_config.json").string() +
                          ": no pad_token (GR00T left-pads its prompts with it)");
  pad_ = *tokenizer_.settings().pad_id;
  head_ = tokenizer_.encode("<|im_start|>user\n");
  tail_ = tokenizer_.encode("<|im_end|>\n");
}

std::string GrootPromptEncoder::prompt(const std::string& text, int64_t frames, int64_t image_tokens) {
  std::string image = "<|vision_start|>";
  for (int64_t i = 0; i < image_tokens; ++i) image += "<|image_pad|>";
  image += "<|vision_end|>";
  std::string out = "<|im_start|>user\n";
  for (int64_t f = 0; f < frames; ++f) out += image;
  return out + text + "<|im_end|>\n";
}

std::vector<std::int32_t> GrootPromptEncoder::prompt_ids(const std::vector<std::int32_t>& text_ids, int64_t frames,
                                                         int64_t image_tokens) const {
  std::vector<std::int32_t> ids = head_;
  for (int64_t f = 0; f < frames; ++f) {
    ids.push_back(vision_start_);
    ids.insert(ids.end(), static_cast<std::size_t>(image_tokens), image_pad_);
    ids.push_back(vision_end_);
  }
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  ids.insert(ids.end(), tail_.begin(), tail_.end());
  return ids;
}

PromptTokens GrootPromptEncoder::encode(const std::vector<const std::vector<std::int32_t>*>& texts, int64_t frames,
                                        int64_t image_tokens) const {
  if (texts.empty()) throw util::ConfigError("GR00T prompt: no task texts to tokenize");
  std::vector<std::vector<std::int32_t>> rows;
  std::size_t longest = 0;
  for (const auto* text : texts) {
    rows.push_back(prompt_ids(*text, frames, image_tokens));
    longest = std::max(longest, rows.back().size());
  }
  const auto batch = static_cast<int64_t>(rows.size()), length = static_cast<int64_t>(longest);
  PromptTokens out{torch::full({batch, length}, static_cast<int64_t>(pad_), torch::kLong),
                   torch::zeros({batch, length}, torch::kLong)};
  auto ids = out.input_ids.accessor<int64_t, 2>();
  auto mask = out.attention_mask.accessor<int64_t, 2>();
  for (int64_t b = 0; b < batch; ++b) {
    const auto& row = rows[static_cast<std::size_t>(b)];
    const int64_t start = length - static_cast<int64_t>(row.size());  // left padding
    for (std::size_t i = 0; i < row.size(); ++i) {
      ids[b][start + static_cast<int64_t>(i)] = row[i];
      mask[b][start + static_cast<int64_t>(i)] = 1;
    }
  }
  return out;
}

}  // namespace lrhost::policy::groot
