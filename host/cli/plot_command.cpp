// The plot subcommand; see plot_command.hpp.
#include "host/cli/plot_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "host/cli/gnuplot.hpp"
#include "host/cli/number_checks.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/metrics/metrics_file.hpp"
#include "host/util/error.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;

namespace {

constexpr int kMinPixels = 100, kMaxPixels = 16384;
// Keys that describe when a line was written rather than how training went: never a default curve.
const std::set<std::string> kNotMetrics = {"step", "time", "elapsed_s"};

struct Run {
  fs::path folder;   // where the default plot.png goes
  std::string name;  // the folder's name, the first part of each curve's title
  metrics::MetricsFile metrics;
};

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// A run argument: a run folder holding metrics.jsonl, or the file itself.
Run open_run(const std::string& argument) {
  const fs::path given(argument);
  std::error_code error;
  if (!fs::exists(given, error))
    throw util::IoError("plot: run folder " + argument + " does not exist",
                        "give the output folder of a training run (the one holding metrics.jsonl)");
  Run run;
  fs::path file;
  if (fs::is_directory(given, error)) {
    run.folder = given;
    file = given / "metrics.jsonl";
    if (!fs::is_regular_file(file, error))
      throw util::IoError(
          "plot: " + file.string() + " not found",
          "training runs write metrics.jsonl (one JSON line per logged step) into their output folder "
          "since lrhost 0.1.0; runs from earlier versions, and runs that have not logged yet, have none");
  } else {
    file = given;
    run.folder = given.parent_path().empty() ? fs::path(".") : given.parent_path();
  }
  // The folder's own name, also for "." or a trailing slash.
  fs::path absolute = fs::absolute(run.folder, error).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  run.name = file.filename() == "metrics.jsonl" ? absolute.filename().string() : file.stem().string();
  run.metrics = metrics::read_metrics_jsonl(file);
  for (const auto& warning : run.metrics.warnings) std::cerr << "lrhost plot: warning: " << warning << "\n";
  if (run.metrics.rows.empty())
    throw util::DataError(
        "plot: " + file.string() + " has no data lines" +
            (run.metrics.partial_last_line ? " (its only line is incomplete: training is writing it)" : ""),
        "training writes a line every log_freq steps; plot again after the first one");
  return run;
}

// Runs with the same folder name (a/outputs, b/outputs) are told apart by their parent folder too.
void make_names_distinct(std::vector<Run>& runs) {
  std::map<std::string, int> count;
  for (const auto& run : runs) ++count[run.name];
  for (auto& run : runs) {
    if (count[run.name] < 2) continue;
    std::error_code error;
    fs::path absolute = fs::absolute(run.folder, error).lexically_normal();
    if (absolute.filename().empty()) absolute = absolute.parent_path();
    run.name = (absolute.parent_path().filename() / run.name).string();
  }
}

std::vector<std::string> choose_metrics(const PlotCommand& command, const std::vector<Run>& runs) {
  std::set<std::string> existing;
  for (const auto& run : runs)
    for (const auto& key : run.metrics.keys()) existing.insert(key);
  const std::string existing_text = join({existing.begin(), existing.end()});
  if (!command.metrics.empty()) {
    for (const auto& metric : command.metrics) {
      if (metric.empty()) throw util::ConfigError("plot --metrics: empty metric name (write --metrics loss,l1_loss)");
      if (!existing.count(metric))
        throw util::ConfigError("plot --metrics: no run has a metric named '" + metric + "'",
                                "metrics in these runs: " + existing_text);
      for (const auto& run : runs)
        if (!run.metrics.has_key(metric))
          std::cerr << "lrhost plot: warning: " << run.metrics.path.string() << " has no '" << metric << "'\n";
    }
    return command.metrics;
  }
  if (existing.count("loss")) return {"loss"};
  std::vector<std::string> shared;
  for (const auto& key : existing) {
    if (kNotMetrics.count(key)) continue;
    bool everywhere = std::all_of(runs.begin(), runs.end(), [&](const Run& run) { return run.metrics.has_key(key); });
    if (everywhere) shared.push_back(key);
  }
  if (shared.empty())
    throw util::ConfigError("plot: the runs have no 'loss' and no metric in common to draw",
                            "choose with --metrics; metrics in these runs: " + existing_text);
  return shared;
}

void check_pixels(const char* option, int value) {
  if (value < kMinPixels || value > kMaxPixels)
    throw util::ConfigError(fmt::format("plot {}: expected a number of pixels from {} to {}, got {}", option,
                                        kMinPixels, kMaxPixels, value));
}

// x of a row: its step, or seconds since the run's first line with a time (rows without one are skipped).
struct XAxis {
  bool time = false;
  double scale = 1;  // seconds per unit of the axis
  std::string label;
};

XAxis choose_x_axis(const std::string& x, const std::vector<Run>& runs) {
  if (x == "step") return {false, 1, "step"};
  double longest_s = 0;
  for (const auto& run : runs) {
    std::optional<double> first, last;
    for (const auto& row : run.metrics.rows)
      if (auto found = row.values.find("time"); found != row.values.end()) {
        if (!first) first = found->second;
        last = found->second;
      }
    if (!first)
      throw util::DataError("plot --x time: " + run.metrics.path.string() + " has no \"time\" values",
                            "plot against steps instead (--x step)");
    longest_s = std::max(longest_s, *last - *first);
  }
  // One unit for all runs, the largest that keeps the axis numbers readable.
  if (longest_s > 3 * 3600) return {true, 3600, "time since the run's first metrics line (h)"};
  if (longest_s > 3 * 60) return {true, 60, "time since the run's first metrics line (min)"};
  return {true, 1, "time since the run's first metrics line (s)"};
}

PlotCurve make_curve(const Run& run, int colour, const std::string& metric, const XAxis& axis, bool log_y,
                     std::size_t& dropped_non_positive) {
  PlotCurve curve;
  curve.title = run.name + ": " + metric;
  curve.colour = colour;
  std::optional<double> start_time, previous_x;
  for (const auto& row : run.metrics.rows) {
    auto value = row.values.find(metric);
    if (value == row.values.end()) continue;
    double x = static_cast<double>(row.step);
    if (axis.time) {
      auto time = row.values.find("time");
      if (time == row.values.end()) continue;
      if (!start_time) {
        // Every curve of a run starts its clock at the run's first timed line, not at its own first point.
        for (const auto& first : run.metrics.rows)
          if (auto found = first.values.find("time"); found != first.values.end()) {
            start_time = found->second;
            break;
          }
      }
      x = (time->second - *start_time) / axis.scale;
    }
    if (log_y && value->second <= 0) {
      ++dropped_non_positive;
      continue;
    }
    // A resumed run logs its steps again from the checkpoint on: start a new line rather than draw one back.
    if (curve.segments.empty() || (previous_x && x < *previous_x)) curve.segments.emplace_back();
    curve.segments.back().emplace_back(x, value->second);
    previous_x = x;
  }
  return curve;
}

// The PNG is written next to its final place and renamed over it, so a viewer watching the file never
// sees half an image; the temporary file is created first, which also proves the place is writable.
// Missing folders of the path are created (`--out figures/run3/loss.png` in a fresh checkout), and
// removed again, when still empty, if no image is written.
class OutputFile {
 public:
  explicit OutputFile(fs::path final_path) : final_(std::move(final_path)) {
    std::error_code error;
    if (fs::is_directory(final_, error))
      throw util::IoError("plot: cannot write the plot to " + final_.string() + ": it is a folder",
                          "give a file name, e.g. --out " + (final_ / "plot.png").string());
    fs::path folder = final_.parent_path().empty() ? fs::path(".") : final_.parent_path();
    for (fs::path missing = folder; !missing.empty() && !fs::exists(missing, error); missing = missing.parent_path()) {
      created_.push_back(missing);  // deepest first
      if (missing == missing.parent_path()) break;
    }
    fs::create_directories(folder, error);
    if (error || !fs::is_directory(folder, error))
      throw util::IoError("plot: cannot write the plot to " + final_.string() + ": cannot create folder " +
                              folder.string() + (error ? ": " + error.message() : ": a file is in the way"),
                          "choose a writable place with --out FILE.png");
    temporary_ = folder / fmt::format(".{}.tmp-{}", final_.filename().string(), ::getpid());
    int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
      throw util::IoError("plot: cannot write the plot to " + final_.string() + ": " + std::strerror(errno),
                          "choose a writable place with --out FILE.png");
    ::close(fd);
  }
  ~OutputFile() {
    if (!committed_) {
      std::error_code ignored;
      fs::remove(temporary_, ignored);
      for (const fs::path& folder : created_) fs::remove(folder, ignored);  // only removes empty folders
    }
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  const fs::path& temporary() const { return temporary_; }
  void commit() {
    std::error_code error;
    if (fs::file_size(temporary_, error) == 0 || error)
      throw util::IoError("plot: gnuplot exited without writing the image " + temporary_.string());
    fs::rename(temporary_, final_, error);
    if (error) throw util::IoError("plot: cannot write the plot to " + final_.string() + ": " + error.message());
    committed_ = true;
  }

 private:
  fs::path final_, temporary_;
  std::vector<fs::path> created_;  // folders this plot created, deepest first
  bool committed_ = false;
};

// A private scratch folder for the script and gnuplot's output, removed at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "lrhost-plot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw util::IoError(std::string("plot: cannot create a temporary folder: ") + std::strerror(errno),
                          "set TMPDIR to a writable folder");
    path_ = pattern;
  }
  ~ScratchDir() {
    try {
      io::remove_tree(path_);
    } catch (const std::exception&) {
      // A leftover scratch folder in the temp folder is harmless; the plot's own outcome matters.
    }
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

fs::path require_gnuplot() {
  const char* search_path = std::getenv("PATH");
  auto found = find_gnuplot(search_path ? search_path : "");
  if (!found)
    throw util::Error("plot: gnuplot not found on PATH; lrhost plot draws through gnuplot",
                      "install it: sudo apt-get install gnuplot-nox (Debian/Ubuntu package gnuplot-nox)");
  return *found;
}

}  // namespace

void add_plot_command(CLI::App& app, PlotCommand& command) {
  command.command = app.add_subcommand(
      "plot", "draw training curves of one or more runs (their metrics.jsonl) into a PNG with gnuplot");
  auto* sub = command.command;
  sub->add_option("runs", command.runs, "run folders holding metrics.jsonl (or the metrics.jsonl files)")->required();
  sub->add_option("--out", command.out, "PNG file to write (default: <first run folder>/plot.png)");
  sub->add_option("--metrics", command.metrics,
                  "comma-separated metrics to draw, one plot each (default: loss, or every metric all runs share)")
      ->delimiter(',')
      ->allow_extra_args(false);  // `--metrics loss RUN_DIR`: RUN_DIR is a run, not a second metric
  sub->add_option("--x", command.x, "x axis: step, or time since each run's first metrics line")
      ->check(CLI::IsMember({"step", "time"}))
      ->capture_default_str();
  sub->add_option("--width", command.width, "image width in pixels (default 1000)")->check(positive_number);
  sub->add_option("--height", command.height, "image height in pixels (default 400 per metric)")
      ->check(positive_number);
  sub->add_flag("--log-y", command.log_y, "logarithmic y axis (values <= 0 are left out)");
}

int run_plot_command(const PlotCommand& command) {
  if (!command.command || !command.command->parsed()) return -1;
  std::vector<Run> runs;
  for (const auto& argument : command.runs) runs.push_back(open_run(argument));
  make_names_distinct(runs);
  const std::vector<std::string> metrics = choose_metrics(command, runs);

  PlotSpec spec;
  spec.width = command.width.value_or(1000);
  spec.height = command.height.value_or(std::min(400 * static_cast<int>(metrics.size()), kMaxPixels));
  check_pixels("--width", spec.width);
  check_pixels("--height", spec.height);
  spec.log_y = command.log_y;
  const XAxis axis = choose_x_axis(command.x, runs);
  spec.x_label = axis.label;
  // One plot per metric, stacked: metrics differ in scale by orders of magnitude (loss ~1, lr ~1e-5), so
  // one shared y axis would flatten all but the largest; runs share a plot, so they compare at a glance,
  // and keep one colour across the plots.
  for (const auto& metric : metrics) {
    PlotPanel panel;
    panel.title = metric;
    std::size_t dropped = 0;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      PlotCurve curve = make_curve(runs[r], static_cast<int>(r), metric, axis, command.log_y, dropped);
      if (!curve.segments.empty()) panel.curves.push_back(std::move(curve));
    }
    if (dropped > 0)
      std::cerr << fmt::format("lrhost plot: warning: --log-y leaves out {} values of '{}' that are <= 0\n", dropped,
                               metric);
    if (panel.curves.empty())
      throw util::DataError("plot: no run has a value of '" + metric + "' to draw" +
                                (command.log_y         ? " above 0 (--log-y)"
                                 : command.x == "time" ? " with a time"
                                                       : ""),
                            command.log_y ? "drop --log-y for this metric" : "");
    spec.panels.push_back(std::move(panel));
  }
  std::optional<std::pair<double, double>> x_range;
  for (const auto& panel : spec.panels)
    for (const auto& curve : panel.curves)
      for (const auto& segment : curve.segments)
        for (const auto& point : segment)
          x_range = x_range ? std::pair{std::min(x_range->first, point.first), std::max(x_range->second, point.first)}
                            : std::pair{point.first, point.first};
  if (x_range && x_range->first < x_range->second) spec.x_range = x_range;

  const fs::path gnuplot = require_gnuplot();
  const fs::path out = command.out.empty() ? runs.front().folder / "plot.png" : fs::path(command.out);
  OutputFile output(out);
  spec.output = output.temporary();
  ScratchDir scratch;
  const fs::path script_file = scratch.path() / "plot.gp";
  {
    std::ofstream script(script_file, std::ios::binary);
    script << gnuplot_script(spec);
    if (!script.flush())
      throw util::IoError("plot: cannot write the gnuplot script " + script_file.string(),
                          "set TMPDIR to a writable folder");
  }
  GnuplotRun result = run_gnuplot(gnuplot, script_file, scratch.path(), command.timeout_s);
  if (result.timed_out)
    throw util::Error(fmt::format("plot: gnuplot ({}) did not finish within {} s and was stopped; its output:\n{}",
                                  gnuplot.string(), command.timeout_s, result.output));
  if (result.exit_code != 0)
    throw util::Error(fmt::format("plot: gnuplot ({}) failed with exit code {}; its output:\n{}", gnuplot.string(),
                                  result.exit_code, result.output));
  // Other messages of a successful run are passed on, tagged, except gnuplot's note that a constant curve
  // (a fixed learning rate) has an empty y range: it widens the range itself and draws the curve fine.
  std::size_t start = 0;
  while (start < result.output.size()) {
    std::size_t end = result.output.find('\n', start);
    if (end == std::string::npos) end = result.output.size();
    std::string line = result.output.substr(start, end - start);
    bool flat_range_note = line.rfind("Warning: empty ", 0) == 0 && line.find(" range [") != std::string::npos;
    if (!flat_range_note && line.find_first_not_of(" \t") != std::string::npos)
      std::cerr << "lrhost plot: gnuplot: " << line << "\n";
    start = end + 1;
  }
  output.commit();
  std::cout << out.string() << "\n";
  return 0;
}

}  // namespace lrhost::cli
