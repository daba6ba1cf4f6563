// GR00T N1.7's prompt as its VLM-encode step builds it (GrootN17VLMEncodeStep, processor_groot.py:
// 2148-2201): one user chat turn holding the sample's frames then its task text, rendered by the
// Qwen3-VL chat template — `<|im_start|>user\n`, per frame `<|vision_start|>` + the image's merged
// tokens as `<|image_pad|>` + `<|vision_end|>`, the text, `<|im_end|>\n` — tokenized by the
// Cosmos-Reason2 tokenizer (Qwen2Tokenizer) and left-padded to the batch's longest with its pad
// token (attention_mask 0 there, int64 as transformers returns it).
//
// The special tokens split the text into pieces the tokenizer encodes one by one, so a prompt's ids
// are the fixed pieces' ids around the task text's: a dataset's task texts are tokenized once, and
// prompt_ids assembles them (the unit test checks it against tokenizing the rendered prompt).
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "host/text/tokenizer.hpp"

namespace lrhost::policy::groot {

struct PromptTokens {
  torch::Tensor input_ids;       // (B, L) int64, left-padded
  torch::Tensor attention_mask;  // (B, L) int64, 0 on padding
};

class GrootPromptEncoder {
 public:
  explicit GrootPromptEncoder(const std::filesystem::path& tokenizer_dir);

  // The rendered chat prompt (apply_chat_template's text with each <|image_pad|> already expanded to
  // `image_tokens` copies, as the processor expands it) of `frames` images and `text`.
  static std::string prompt(const std::string& text, int64_t frames, int64_t image_tokens);
  // The task text's own ids, and the prompt's assembled from them.
  std::vector<std::int32_t> text_ids(const std::string& text) const { return tokenizer_.encode(text); }
  std::vector<std::int32_t> prompt_ids(const std::vector<std::int32_t>& text_ids, int64_t frames,
                                       int64_t image_tokens) const;
  // The batch of prompts, left-padded.
  PromptTokens encode(const std::vector<const std::vector<std::int32_t>*>& texts, int64_t frames,
                      int64_t image_tokens) const;

  const text::Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  text::Tokenizer tokenizer_;
  std::vector<std::int32_t> head_, tail_;  // "<|im_start|>user\n", "<|im_end|>\n"
  std::int32_t vision_start_ = 0, vision_end_ = 0, image_pad_ = 0, pad_ = 0;
};

}  // namespace lrhost::policy::groot
