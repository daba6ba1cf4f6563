// `lrhost plot RUN_DIR... [--out FILE.png] [--metrics loss,l1_loss] [--x step|time] [--width W] [--height H]
// [--log-y]`: training curves of one or more runs (their metrics.jsonl, host/metrics) drawn into a PNG by
// gnuplot (host/cli/gnuplot). Runs are overlaid, one plot per metric stacked top to bottom. Prints the
// path it wrote.
#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace lrhost::cli {

struct PlotCommand {
  CLI::App* command = nullptr;
  std::vector<std::string> runs;     // run folders, or their metrics.jsonl files
  std::string out;                   // empty: <first run folder>/plot.png
  std::vector<std::string> metrics;  // empty: loss, or every metric all runs share
  std::string x = "step";            // step, or time (since each run's first line)
  std::optional<int> width, height;  // pixels; default 1000 wide, 400 per metric high
  bool log_y = false;
  double timeout_s = 60;  // gnuplot's time limit (not an option: a plot takes well under a second)
};

void add_plot_command(CLI::App& app, PlotCommand& command);
// Runs `plot` when it was parsed; returns the exit code, or -1 when it was not.
int run_plot_command(const PlotCommand& command);

}  // namespace lrhost::cli
