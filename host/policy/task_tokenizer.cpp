// Task strings -> language tokens, per batch or through a per-dataset table (task_tokenizer.hpp).
#include "host/policy/task_tokenizer.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy {

TaskTokenizer::TaskTokenizer(LanguageSettings settings)
    : settings_(std::move(settings)), tokenizer_(text::Tokenizer::load(settings_.tokenizer_dir)) {
  if (settings_.padding != "longest" && settings_.padding != "max_length")
    throw util::ConfigError("language tokenizer: padding must be 'longest' or 'max_length', got '" + settings_.padding +
                            "'");
  if (settings_.max_length <= 0)
    throw util::ConfigError("language tokenizer: max_length must be positive, got " +
                            std::to_string(settings_.max_length));
}

LanguageTokens TaskTokenizer::encode(const std::vector<std::string>& tasks, text::Padding padding) const {
  if (tasks.empty()) throw util::ConfigError("language tokenizer: no task strings to tokenize");
  text::BatchOptions options;
  options.max_length = static_cast<std::size_t>(settings_.max_length);
  options.truncation = true;
  options.padding = padding;
  options.padding_side = text::Side::right;
  auto encodings = tokenizer_.encode_batch(tasks, options);
  const auto rows = static_cast<int64_t>(encodings.size());
  const auto length = static_cast<int64_t>(encodings.front().ids.size());
  LanguageTokens out{torch::empty({rows, length}, torch::kLong), torch::empty({rows, length}, torch::kBool)};
  auto tokens = out.tokens.accessor<int64_t, 2>();
  auto mask = out.attention_mask.accessor<bool, 2>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < length; ++c) {
      tokens[r][c] = encodings[static_cast<std::size_t>(r)].ids[static_cast<std::size_t>(c)];
      mask[r][c] = encodings[static_cast<std::size_t>(r)].attention_mask[static_cast<std::size_t>(c)] != 0;
    }
  return out;
}

LanguageTokens TaskTokenizer::tokenize(const std::vector<std::string>& tasks) const {
  return encode(tasks, settings_.padding == "max_length" ? text::Padding::max_length : text::Padding::longest);
}

void TaskTokenizer::set_task_table(const std::vector<std::string>& tasks) {
  table_ = encode(tasks, text::Padding::max_length);
}

std::vector<std::string> TaskTokenizer::task_strings(const torch::Tensor& task_index) const {
  if (task_strings_.empty())
    throw util::ConfigError("language tokenizer: the batch gives task_index but no task table was set",
                            "build the policy with lr.policy.new(cfg, dataset), or call policy:set_tasks(dataset)");
  auto index = task_index.to(torch::kCPU, torch::kLong).reshape({-1}).contiguous();
  const int64_t* indices = index.data_ptr<int64_t>();
  std::vector<std::string> out;
  for (int64_t i = 0; i < index.numel(); ++i) {
    const int64_t k = indices[i];
    if (k < 0 || k >= static_cast<int64_t>(task_strings_.size()))
      throw util::DataError("language tokenizer: task_index " + std::to_string(k) + " out of range [0, " +
                                std::to_string(task_strings_.size()) + ") in the batch",
                            "the policy's task table comes from another dataset; call policy:set_tasks(dataset)");
    out.push_back(task_strings_[static_cast<std::size_t>(k)]);
  }
  return out;
}

LanguageTokens TaskTokenizer::tokenize_indices(const torch::Tensor& task_index) const {
  if (!has_task_table())
    throw util::ConfigError(
        "language tokenizer: the batch gives task_index but no task table was set",
        "build the policy with lr.policy.new(cfg, dataset), or call policy:set_tasks(dataset) (also "
        "after loading processors from a folder or a checkpoint: they carry no task table)");
  auto index = task_index.to(torch::kCPU, torch::kLong).reshape({-1});
  const int64_t count = table_.tokens.size(0);
  if (index.numel() > 0 && (index.min().item<int64_t>() < 0 || index.max().item<int64_t>() >= count))
    throw util::DataError("language tokenizer: task_index out of range [0, " + std::to_string(count) +
                              ") in the batch (min " + std::to_string(index.min().item<int64_t>()) + ", max " +
                              std::to_string(index.max().item<int64_t>()) + ")",
                          "the policy's task table comes from another dataset; call policy:set_tasks(dataset)");
  LanguageTokens out{table_.tokens.index_select(0, index), table_.attention_mask.index_select(0, index)};
  if (settings_.padding == "longest" && index.numel() > 0) {
    const int64_t longest = out.attention_mask.sum(1).max().item<int64_t>();
    out.tokens = out.tokens.slice(1, 0, longest).contiguous();
    out.attention_mask = out.attention_mask.slice(1, 0, longest).contiguous();
  }
  return out;
}

}  // namespace lrhost::policy
