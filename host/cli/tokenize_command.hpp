// `lrhost tokenize TOKENIZER_DIR [--max-length N] [--padding longest|max_length] TEXT...`: encodes each text
// with the folder's Hugging Face tokenizer (host/text) and prints one JSON line per text,
// {"text": ..., "ids": [...], "attention_mask": [...]}. For checking ids against transformers and for
// diagnostics (--describe, --decode).
#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace lrhost::cli {

struct TokenizeCommand {
  CLI::App* command = nullptr;
  std::string folder;
  std::vector<std::string> texts;
  std::optional<std::size_t> max_length;
  std::string padding = "none";
  std::string padding_side, truncation_side;  // empty: the config's
  std::string pipeline = "transformers";
  bool stdin_lines = false;  // --stdin: read the texts as JSON strings, one per line
  bool describe = false;
  bool decode = false;
  int bench_passes = 0;  // --bench N: encode the texts N times, print throughput to stderr instead of ids
};

void add_tokenize_command(CLI::App& app, TokenizeCommand& command);
// Runs `tokenize` when it was parsed; returns the exit code, or -1 when it was not.
int run_tokenize_command(const TokenizeCommand& command);

}  // namespace lrhost::cli
