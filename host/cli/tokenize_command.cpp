// The tokenize subcommand; see tokenize_command.hpp.
#include "host/cli/tokenize_command.hpp"

#include <fmt/format.h>

#include <time.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "host/cli/number_checks.hpp"
#include "host/text/tokenizer.hpp"
#include "host/util/error.hpp"

namespace lrhost::cli {

void add_tokenize_command(CLI::App& app, TokenizeCommand& command) {
  command.command =
      app.add_subcommand("tokenize",
                         "encode texts with a Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json); "
                         "prints one JSON line per text with ids and attention_mask");
  auto* sub = command.command;
  sub->add_option("tokenizer_dir", command.folder, "folder holding tokenizer.json")->required();
  sub->add_option("texts", command.texts, "texts to encode");
  sub->add_option("--max-length", command.max_length, "truncate to N tokens (side from tokenizer_config.json)")
      ->check(positive_number);
  sub->add_option("--padding", command.padding, "pad the batch: none, longest, or max_length (to --max-length)")
      ->check(CLI::IsMember({"none", "longest", "max_length"}))
      ->capture_default_str();
  sub->add_option("--padding-side", command.padding_side, "override the config's padding side (LeRobot passes right)")
      ->check(CLI::IsMember({"left", "right"}));
  sub->add_option("--truncation-side", command.truncation_side, "override the config's truncation side")
      ->check(CLI::IsMember({"left", "right"}));
  sub->add_option("--pipeline", command.pipeline,
                  "transformers: what transformers 5 AutoTokenizer runs (LeRobot's path); file: tokenizer.json as is")
      ->check(CLI::IsMember({"transformers", "file"}))
      ->capture_default_str();
  sub->add_flag("--stdin", command.stdin_lines, "also read texts from stdin, one JSON string per line");
  sub->add_flag("--describe", command.describe, "print a summary of the tokenizer to stderr");
  sub->add_flag("--decode", command.decode, "add \"decoded\": the ids decoded back to text (ByteLevel decoder)");
  sub->add_option("--bench", command.bench_passes,
                  "encode the texts N times on this thread and print tokens/s to stderr (no JSON output)")
      ->check(positive_number);
}

int run_tokenize_command(const TokenizeCommand& command) {
  if (!command.command || !command.command->parsed()) return -1;
  using nlohmann::json;
  auto tokenizer = text::Tokenizer::load(
      command.folder, command.pipeline == "file" ? text::PipelineSource::file : text::PipelineSource::transformers);
  if (command.describe) std::cerr << tokenizer.describe() << "\n";

  std::vector<std::string> texts = command.texts;
  if (command.stdin_lines) {
    std::string line;
    for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
      if (line.empty()) continue;
      json value = json::parse(line, nullptr, false);
      if (!value.is_string())
        throw util::ConfigError("tokenize --stdin: line " + std::to_string(number) + " is not a JSON string",
                                "write each text as a JSON string, e.g. \"pick up the cube\\n\"");
      texts.push_back(value.get<std::string>());
    }
  }
  text::BatchOptions options;
  options.max_length = command.max_length;
  options.truncation = command.max_length.has_value();
  options.padding = command.padding == "longest"      ? text::Padding::longest
                    : command.padding == "max_length" ? text::Padding::max_length
                                                      : text::Padding::none;
  auto side = [](const std::string& name) -> std::optional<text::Side> {
    if (name.empty()) return std::nullopt;
    return name == "left" ? text::Side::left : text::Side::right;
  };
  options.padding_side = side(command.padding_side);
  options.truncation_side = side(command.truncation_side);

  if (command.bench_passes > 0) {
    // The first pass fills the word cache; the later ones show the steady state of a long-running process.
    // This thread's CPU time is printed too: on a shared machine wall time also counts waiting for a core.
    auto cpu_now = [] {
      timespec now{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
      return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
    };
    std::vector<double> seconds, cpu_seconds;
    std::size_t tokens_per_pass = 0;
    for (int pass = 0; pass < command.bench_passes; ++pass) {
      auto start = std::chrono::steady_clock::now();
      double cpu_start = cpu_now();
      auto batch = tokenizer.encode_batch(texts, options);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      cpu_seconds.push_back(cpu_now() - cpu_start);
      tokens_per_pass = 0;
      for (const auto& encoding : batch) tokens_per_pass += encoding.ids.size();
    }
    std::size_t skip = seconds.size() > 1 ? 1 : 0;
    double steady_s = 0, steady_cpu_s = 0;
    for (std::size_t i = skip; i < seconds.size(); ++i) {
      steady_s += seconds[i];
      steady_cpu_s += cpu_seconds[i];
    }
    double steady_tokens = static_cast<double>(tokens_per_pass) * static_cast<double>(seconds.size() - skip);
    std::cerr << fmt::format(
        "lrhost tokenize: {} texts, {} tokens per pass; first pass {:.0f} tokens/s; "
        "passes 2..{}: {:.0f} tokens/s (per second of this thread's CPU time: first pass {:.0f}, passes 2..{} "
        "{:.0f})\n",
        texts.size(), tokens_per_pass, static_cast<double>(tokens_per_pass) / seconds[0], seconds.size(),
        steady_tokens / steady_s, static_cast<double>(tokens_per_pass) / cpu_seconds[0], seconds.size(),
        steady_tokens / steady_cpu_s);
    return 0;
  }
  auto encodings = tokenizer.encode_batch(texts, options);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    json line = {{"text", texts[i]}, {"ids", encodings[i].ids}, {"attention_mask", encodings[i].attention_mask}};
    if (command.decode) line["decoded"] = tokenizer.decode(encodings[i].ids);
    // ASCII-only lines (\u escapes): U+2028 and friends stay inside their line for every reader. Decoded text
    // may split a character between tokens; replace rather than fail.
    std::cout << line.dump(-1, ' ', true, json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace lrhost::cli
