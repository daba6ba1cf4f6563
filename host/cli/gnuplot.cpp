// Finding, scripting and running gnuplot; see gnuplot.hpp.
#include "host/cli/gnuplot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "host/util/error.hpp"

extern char** environ;

namespace lrhost::cli {
namespace fs = std::filesystem;

namespace {

// Okabe-Ito colours (told apart with most colour-vision deficiencies); yellow last, it is faint on white.
constexpr const char* kColours[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                    "#cc79a7", "#56b4e9", "#000000", "#f0e442"};
constexpr int kColourCount = static_cast<int>(sizeof(kColours) / sizeof(kColours[0]));
// Curves with few points (evaluation metrics, short runs) get markers: a line alone hides single points.
constexpr std::size_t kMarkersUpTo = 50;

std::string curve_style(const PlotCurve& curve) {
  std::size_t points = 0;
  for (const auto& segment : curve.segments) points += segment.size();
  // Past the palette, the colours repeat with another dash pattern, so every curve stays distinct.
  std::string style =
      fmt::format("lw 1.5 lc rgb '{}' dt {}", kColours[curve.colour % kColourCount], curve.colour / kColourCount + 1);
  return points <= kMarkersUpTo ? "with linespoints pt 7 ps 0.6 " + style : "with lines " + style;
}

std::string read_file_or_empty(const fs::path& file) {
  std::ifstream input(file, std::ios::binary);
  std::ostringstream text;
  text << input.rdbuf();
  return text.str();
}

// Owns the spawn's file actions so every exit path destroys them.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

}  // namespace

std::string gnuplot_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\'')
      quoted += "''";
    else if (byte < 0x20 || byte == 0x7f)
      quoted += ' ';
    else
      quoted += c;
  }
  return quoted + "'";
}

std::string gnuplot_script(const PlotSpec& spec) {
  std::string script = "# written by lrhost plot\n";
  // noenhanced: metric names like l1_loss must not turn into subscripts.
  script += fmt::format("set terminal pngcairo size {},{} noenhanced font 'sans,10' background rgb 'white'\n",
                        spec.width, spec.height);
  script += "set encoding utf8\n";
  script += "set output " + gnuplot_quote(spec.output.string()) + "\n";
  // The data travel inside the script as datablocks: numbers only, so nothing in them is ever parsed as
  // a command, and no second temporary file is needed. A blank line breaks a curve into segments.
  for (std::size_t p = 0; p < spec.panels.size(); ++p)
    for (std::size_t c = 0; c < spec.panels[p].curves.size(); ++c) {
      script += fmt::format("$curve_{}_{} << EOD\n", p, c);
      const auto& segments = spec.panels[p].curves[c].segments;
      for (std::size_t s = 0; s < segments.size(); ++s) {
        if (s > 0) script += "\n";
        for (const auto& [x, y] : segments[s]) script += fmt::format("{} {}\n", x, y);
      }
      script += "EOD\n";
    }
  script += "set grid\n";
  script += "set key top right opaque box\n";
  script += "set xlabel " + gnuplot_quote(spec.x_label) + "\n";
  // Stacked panels share the x range and the left margin, so a step lines up from one panel to the next;
  // %g keeps small values (learning rates) short; a little room keeps points off the top and bottom frame.
  if (spec.x_range) script += fmt::format("set xrange [{}:{}]\n", spec.x_range->first, spec.x_range->second);
  script += "set lmargin 12\n";
  script += "set format y '%g'\n";
  script += "set offsets 0, 0, graph 0.05, graph 0.05\n";
  if (spec.log_y) script += "set logscale y\n";
  if (spec.panels.size() > 1) script += fmt::format("set multiplot layout {},1\n", spec.panels.size());
  for (std::size_t p = 0; p < spec.panels.size(); ++p) {
    const PlotPanel& panel = spec.panels[p];
    script += "set title " + gnuplot_quote(panel.title) + "\n";
    script += "plot";
    for (std::size_t c = 0; c < panel.curves.size(); ++c)
      script += fmt::format("{} $curve_{}_{} using 1:2 {} title {}", c == 0 ? "" : ", \\\n    ", p, c,
                            curve_style(panel.curves[c]), gnuplot_quote(panel.curves[c].title));
    script += "\n";
  }
  if (spec.panels.size() > 1) script += "unset multiplot\n";
  script += "unset output\n";
  return script;
}

std::optional<fs::path> find_gnuplot(const std::string& search_path) {
  std::size_t start = 0;
  while (start <= search_path.size()) {
    std::size_t end = search_path.find(':', start);
    if (end == std::string::npos) end = search_path.size();
    const std::string folder = search_path.substr(start, end - start);
    start = end + 1;
    if (folder.empty()) continue;  // an empty entry means the current folder: never run a stray binary from it
    fs::path candidate = fs::path(folder) / "gnuplot";
    std::error_code error;
    if (fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0)
      return fs::absolute(candidate, error);
  }
  return std::nullopt;
}

GnuplotRun run_gnuplot(const fs::path& gnuplot, const fs::path& script_file, const fs::path& scratch_dir,
                       double timeout_s) {
  const fs::path output_file = scratch_dir / "gnuplot_output.txt";
  FileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(actions.get(), STDOUT_FILENO, STDERR_FILENO);
  const std::string program = gnuplot.string(), script = script_file.string();
  std::vector<char*> argv{const_cast<char*>(program.c_str()), const_cast<char*>(script.c_str()), nullptr};
  pid_t pid = 0;
  if (int error = posix_spawn(&pid, program.c_str(), actions.get(), nullptr, argv.data(), environ); error != 0)
    throw util::IoError(fmt::format("could not start {}: {}", program, std::strerror(error)),
                        "install gnuplot: sudo apt-get install gnuplot-nox (Debian/Ubuntu package gnuplot-nox)");

  GnuplotRun result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR)
      throw util::IoError(fmt::format("waiting for {}: {}", program, std::strerror(errno)));
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  result.output = read_file_or_empty(output_file);
  return result;
}

}  // namespace lrhost::cli
