// The language steps of a VLA's preprocessor (LeRobot 0.6.1 processor_smolvla.py and
// processor/tokenizer_processor.py): each task string gets a trailing "\n" unless it has one
// (smolvla_new_line_processor), then the VLM's tokenizer encodes it with truncation to max_length and
// right padding ("longest" in the batch or "max_length"), giving observation.language.tokens (B, L)
// int64 and observation.language.attention_mask (B, L) bool, exactly as LeRobot's TokenizerProcessorStep
// writes them. Batches from lrhost's loader carry `task_index`, so a dataset's tasks are tokenized once
// into a table (num_tasks, max_length) and a batch's tokens are rows of it, cut to the batch's
// longest task under "longest" padding — the same ids and mask as tokenizing the strings per batch.
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "host/policy/policy.hpp"
#include "host/text/tokenizer.hpp"

namespace lrhost::policy {

struct LanguageTokens {
  torch::Tensor tokens;          // (B, L) int64
  torch::Tensor attention_mask;  // (B, L) bool
};

class TaskTokenizer {
 public:
  // Loads the tokenizer from settings.tokenizer_dir (errors name the folder and file). It tokenizes
  // the texts as given: the pipeline's text steps (new line, pi05's prompt) run in PolicyProcessors.
  explicit TaskTokenizer(LanguageSettings settings);

  LanguageTokens tokenize(const std::vector<std::string>& tasks) const;
  // A dataset's tasks by task_index, tokenized once.
  void set_task_table(const std::vector<std::string>& tasks);
  // A dataset's task strings by task_index, kept untokenized (for text that also depends on the
  // batch, pi05's state prompt), and the strings of a batch's task_index (B,) or (B, 1).
  void set_task_strings(const std::vector<std::string>& tasks) { task_strings_ = tasks; }
  std::vector<std::string> task_strings(const torch::Tensor& task_index) const;
  bool has_task_table() const { return table_.tokens.defined(); }
  // Rows of the table for task_index (B,) or (B, 1) integer; errors name an index out of range.
  LanguageTokens tokenize_indices(const torch::Tensor& task_index) const;

  const LanguageSettings& settings() const { return settings_; }

 private:
  LanguageTokens encode(const std::vector<std::string>& tasks, text::Padding padding) const;

  LanguageSettings settings_;
  text::Tokenizer tokenizer_;
  LanguageTokens table_;  // padded to max_length
  std::vector<std::string> task_strings_;
};

}  // namespace lrhost::policy
