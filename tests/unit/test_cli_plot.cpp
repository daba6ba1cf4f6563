// `lrhost plot` (host/cli/plot_command.*, host/cli/gnuplot.*): the PNG drawn from two runs is a real
// image of the requested size with both runs' curves in it (decoded and its pixels counted, independent
// of gnuplot), run names with quotes stay text, and gnuplot's failures and hangs come back as results.
// The command-line errors are lua.fail.plot_* (tests/lua/cli_cases.cmake).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "host/cli/gnuplot.hpp"
#include "host/cli/plot_command.hpp"
#include "host/data/video/png_codec.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::read_bytes;

namespace fs = std::filesystem;
using lrhost::test::TempDir;

namespace {

uint32_t big_endian_u32(const std::string& bytes, std::size_t at) {
  uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// A run's metrics.jsonl: `steps` lines of a loss falling from `start`, l1_loss half of it, and an
// evaluation key on every tenth line; `partial` appends a cut line as a running training would.
void write_run(const fs::path& folder, int steps, double start, bool partial) {
  fs::create_directories(folder);
  std::ofstream file(folder / "metrics.jsonl", std::ios::binary);
  for (int i = 1; i <= steps; ++i) {
    double loss = start / (1.0 + 0.1 * i);
    file << "{\"step\": " << i * 10 << ", \"time\": " << 1764049200 + i << ", \"elapsed_s\": " << i
         << ", \"loss\": " << loss << ", \"l1_loss\": " << loss / 2 << ", \"lr\": 1e-05";
    if (i % 10 == 0) file << ", \"eval/success_rate\": " << 0.1 * (i / 10);
    file << "}\n";
  }
  if (partial) file << "{\"step\": " << (steps + 1) * 10 << ", \"loss\": 0.";
}

// Parses `arguments` as lrhost's command line would (CLI11 takes them last-first) and runs the command.
int run_plot(std::vector<std::string> arguments, lrhost::cli::PlotCommand& command) {
  CLI::App app{"lrhost"};
  lrhost::cli::add_plot_command(app, command);
  arguments.insert(arguments.begin(), "plot");
  std::reverse(arguments.begin(), arguments.end());
  app.parse(arguments);
  return lrhost::cli::run_plot_command(command);
}

// Pixels within `tolerance` (per channel) of an RGB colour, and the columns they span, in rows [top, bottom).
struct ColourHits {
  int64_t pixels = 0;
  int64_t first_column = -1, last_column = -1;
};
ColourHits find_colour(const torch::Tensor& chw, int r, int g, int b, int64_t top, int64_t bottom, int tolerance = 40) {
  auto image = chw.slice(1, top, bottom).to(torch::kInt32);
  auto near =
      (image[0] - r).abs().le(tolerance) & (image[1] - g).abs().le(tolerance) & (image[2] - b).abs().le(tolerance);
  ColourHits hits;
  hits.pixels = near.sum().item<int64_t>();
  auto columns = near.any(0).nonzero();
  if (columns.numel() > 0) {
    hits.first_column = columns.min().item<int64_t>();
    hits.last_column = columns.max().item<int64_t>();
  }
  return hits;
}

void write_script(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
  ::chmod(file.c_str(), 0755);
}

}  // namespace

TEST_CASE("plot: two runs, two metrics stacked, drawn to the requested size with every curve in it") {
  const char* search_path = std::getenv("PATH");
  REQUIRE_MESSAGE(lrhost::cli::find_gnuplot(search_path ? search_path : "").has_value(),
                  "gnuplot is not installed: sudo apt-get install gnuplot-nox (scripts/setup installs it)");
  TempDir dir("plot");
  // A quote of each kind in a run folder name must reach the legend as text, not break the script.
  const fs::path run_a = dir / "run 'a\"", run_b = dir / "run_b";
  write_run(run_a, 60, 2.0, false);
  write_run(run_b, 40, 1.0, true);
  const fs::path out = dir / "curves.png";
  lrhost::cli::PlotCommand command;
  REQUIRE(run_plot({run_a.string(), run_b.string(), "--metrics", "loss,l1_loss", "--width", "640", "--height", "480",
                    "--out", out.string()},
                   command) == 0);

  const std::string png = read_bytes(out);
  REQUIRE(png.size() > 33);
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(png.substr(12, 4) == "IHDR");
  CHECK(big_endian_u32(png, 16) == 640);
  CHECK(big_endian_u32(png, 20) == 480);
  // Nothing but the image is left in the folder (the temporary file was renamed over it).
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) entries += entry.is_regular_file() ? 1 : 0;
  CHECK(entries == 1);

  torch::Tensor image;
  try {
    image = lrhost::data::decode_png(png, out.string());
  } catch (const lrhost::util::NotImplemented& error) {
    WARN_MESSAGE(false, "pixel checks skipped: " << error.what());
    return;
  }
  REQUIRE(image.size(0) >= 3);
  CHECK(image.size(1) == 480);
  CHECK(image.size(2) == 640);
  // Each run has its colour (Okabe-Ito blue, then orange) in both plots: the loss plot in the top half,
  // l1_loss in the bottom half. A curve spans most of the width; the legend's sample line alone would not.
  for (auto [top, bottom] : {std::pair<int64_t, int64_t>{0, 240}, {240, 480}}) {
    for (auto [name, r, g, b] :
         {std::tuple<const char*, int, int, int>{"run 'a\"", 0x00, 0x72, 0xb2}, {"run_b", 0xe6, 0x9f, 0x00}}) {
      CAPTURE(name);
      CAPTURE(top);
      ColourHits hits = find_colour(image, r, g, b, top, bottom);
      CHECK(hits.pixels > 300);
      CHECK(hits.last_column - hits.first_column > 640 / 2);
    }
  }
  // Anti-aliased text, axes and two curves: far more than the two colours of a blank or frame-only image.
  auto packed = (image[0].to(torch::kInt32) * 65536 + image[1].to(torch::kInt32) * 256 + image[2].to(torch::kInt32));
  CHECK(std::get<0>(at::_unique(packed.flatten())).numel() > 20);
}

TEST_CASE("plot: --x time, --log-y and the default output next to the first run") {
  TempDir dir("plot");
  write_run(dir / "only", 30, 1.0, false);
  lrhost::cli::PlotCommand command;
  REQUIRE(run_plot({(dir / "only" / "metrics.jsonl").string(), "--x", "time", "--log-y"}, command) == 0);
  const std::string png = read_bytes(dir / "only" / "plot.png");
  REQUIRE(png.size() > 24);
  CHECK(big_endian_u32(png, 16) == 1000);  // default width
  CHECK(big_endian_u32(png, 20) == 400);   // one metric (loss): 400 pixels
}

TEST_CASE("plot: bad inputs are errors naming what was expected") {
  TempDir dir("plot");
  write_run(dir / "run", 5, 1.0, false);
  auto error_of = [&](std::vector<std::string> arguments) -> std::string {
    lrhost::cli::PlotCommand command;
    try {
      run_plot(std::move(arguments), command);
    } catch (const std::exception& error) {
      return lrhost::util::describe(error);
    }
    return "(no error)";
  };
  const std::string run = (dir / "run").string();
  std::string error = error_of({run, "--metrics", "loss,nope"});
  CHECK_MESSAGE(error.find("no run has a metric named 'nope'") != std::string::npos, error);
  CHECK_MESSAGE(error.find("elapsed_s, l1_loss, loss, lr, time") != std::string::npos, error);
  error = error_of({run, "--width", "50"});
  CHECK_MESSAGE(error.find("--width: expected a number of pixels from 100 to 16384, got 50") != std::string::npos,
                error);
  error = error_of({run, "--out", run});
  CHECK_MESSAGE(error.find("it is a folder") != std::string::npos, error);
  // Every value <= 0 under --log-y leaves nothing to draw.
  fs::create_directories(dir / "zero");
  std::ofstream(dir / "zero" / "metrics.jsonl") << "{\"step\": 1, \"loss\": 0}\n{\"step\": 2, \"loss\": -1}\n";
  error = error_of({(dir / "zero").string(), "--log-y"});
  CHECK_MESSAGE(error.find("no run has a value of 'loss' to draw above 0 (--log-y)") != std::string::npos, error);
  CHECK_FALSE(fs::exists(dir / "zero" / "plot.png"));
}

TEST_CASE("gnuplot: quoting keeps every text a literal") {
  using lrhost::cli::gnuplot_quote;
  CHECK(gnuplot_quote("run_1: loss") == "'run_1: loss'");
  CHECK(gnuplot_quote("it's") == "'it''s'");
  CHECK(gnuplot_quote("a\nb\rc") == "'a b c'");  // a newline would end the command
  CHECK(gnuplot_quote("`id` @m \"x\" \\n") == "'`id` @m \"x\" \\n'");
}

TEST_CASE("gnuplot: a failing or hanging gnuplot comes back with its output, within the time limit") {
  TempDir dir("gnuplot");
  fs::create_directories(dir / "bin");
  const fs::path script = dir / "plot.gp";
  std::ofstream(script) << "plot x\n";
  CHECK(lrhost::cli::find_gnuplot((dir / "bin").string()) == std::nullopt);

  write_script(dir / "bin" / "gnuplot", "#!/bin/sh\necho \"line 1: undefined variable: $1\" >&2\nexit 3\n");
  auto found = lrhost::cli::find_gnuplot("/nonexistent::" + (dir / "bin").string());
  REQUIRE(found.has_value());
  auto failed = lrhost::cli::run_gnuplot(*found, script, dir.path, 10);
  CHECK(failed.exit_code == 3);
  CHECK_FALSE(failed.timed_out);
  CHECK(failed.output == "line 1: undefined variable: " + script.string() + "\n");

  write_script(dir / "bin" / "gnuplot", "#!/bin/sh\nexec sleep 30\n");
  auto start = std::chrono::steady_clock::now();
  auto hung = lrhost::cli::run_gnuplot(*found, script, dir.path, 0.5);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(hung.timed_out);
  CHECK(hung.exit_code == 128 + 9);
  CHECK(seconds < 5);
}
