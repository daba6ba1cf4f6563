// gnuplot as the drawing back end of `lrhost plot`: finding the executable on PATH, writing the script
// (data inline as datablocks, every user-given text quoted), and running it as a child process with a
// time limit. The host links no plotting or image library; gnuplot (Debian package gnuplot-nox) does it.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::cli {

// One curve: its legend title, a colour slot (curves of one run share it across panels) and its points
// as segments; a new segment starts where the line must not join the previous point (a resumed run
// that logs earlier steps again).
struct PlotCurve {
  std::string title;
  int colour = 0;
  std::vector<std::vector<std::pair<double, double>>> segments;
};

// One plot area: a title (the metric) and its curves.
struct PlotPanel {
  std::string title;
  std::vector<PlotCurve> curves;
};

struct PlotSpec {
  std::filesystem::path output;  // PNG written by gnuplot
  int width = 1000, height = 500;
  bool log_y = false;
  std::string x_label;
  // The x range of every panel, so that stacked panels line up; nullopt: each its own (gnuplot's choice).
  std::optional<std::pair<double, double>> x_range;
  std::vector<PlotPanel> panels;  // stacked top to bottom
};

// `text` as a gnuplot single-quoted string literal: ' doubled, control characters (which would end the
// command) replaced by spaces. Single-quoted strings get no backslash, backquote or macro processing.
std::string gnuplot_quote(const std::string& text);

// The complete gnuplot script drawing `spec` into spec.output.
std::string gnuplot_script(const PlotSpec& spec);

// Absolute path of an executable `gnuplot` in the colon-separated `search_path`; nullopt when none.
std::optional<std::filesystem::path> find_gnuplot(const std::string& search_path);

struct GnuplotRun {
  int exit_code = 0;       // the exit status, or 128 + signal when it was killed
  bool timed_out = false;  // killed after the time limit
  std::string output;      // its stdout and stderr together
};

// Runs `gnuplot script_file` (posix_spawn, no shell, stdin /dev/null), waits at most timeout_s and then
// kills it. Output goes through a file in `scratch_dir`, so a chatty gnuplot can never block on a full pipe.
// Throws util::IoError when it cannot be started.
GnuplotRun run_gnuplot(const std::filesystem::path& gnuplot, const std::filesystem::path& script_file,
                       const std::filesystem::path& scratch_dir, double timeout_s);

}  // namespace lrhost::cli
