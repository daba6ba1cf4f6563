// Test driver of the TensorBoard interop check (tensorboard_interop.sh): writes event files with
// host/metrics/TensorBoardWriter into LOGDIR and lists every event it wrote in EXPECTED_JSON, which
// tensorboard_check.py compares with what TensorBoard's own readers make of LOGDIR.
//
//   lrhost_tensorboard_write LOGDIR EXPECTED_JSON
//
// Two writers in one folder, as a crashed run and its resume leave it:
//   run 1: start_session(1), scalars at steps 1..20 (four tags: ordinary, negative, tiny, large, plus
//          NaN, infinities and a value beyond float32), text at steps 1 (UTF-8, newlines) and 15;
//   run 2: start_session(12), the same tags at steps 12..25 with other values, text at step 12.
// TensorBoard must then show run 1's events below step 12 and only run 2's from step 12 on.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "host/metrics/tensorboard_writer.hpp"
#include "host/util/error.hpp"

using lrhost::metrics::TensorBoardWriter;

namespace {

constexpr int64_t kResumeStep = 12;
constexpr double kBaseTime = 1700000000.0;

// Full precision and NaN/inf as text ("nan", "inf", "-inf"): Python's float() reads them all back.
std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// Scalar values of `run` (1 or 2) at `step`, one per tag.
std::vector<std::pair<std::string, double>> scalars(int run, int64_t step) {
  const double s = static_cast<double>(step);
  const double sign = run == 1 ? 1.0 : -1.0;  // run 2's values differ from run 1's at every step
  double special = sign * (0.1 * s);
  if (step == 3) special = std::numeric_limits<double>::quiet_NaN();
  if (step == 4) special = std::numeric_limits<double>::infinity();
  if (step == 5) special = -std::numeric_limits<double>::infinity();
  if (step == 6) special = -1e39;  // beyond float32: stored as -inf
  return {{"train/loss", sign * 2.5 / s + 0.001 * run},
          {"train/negative", -1.5 * s - 0.125 * run},
          {"train/tiny", step == 2 ? 1e-40 : sign * 1e-30 * s * run},  // 1e-40: a float32 subnormal
          {"train/large", sign * 1e36 * s * run},
          {"eval/special", special}};
}

struct Recorder {
  nlohmann::json events = nlohmann::json::array();

  void scalar(TensorBoardWriter& writer, int run, const std::string& tag, int64_t step, double value, double time) {
    writer.add_scalar(tag, step, value, time);
    events.push_back({{"run", run},
                      {"kind", "scalar"},
                      {"tag", tag},
                      {"step", step},
                      {"value", exact(value)},
                      {"wall_time", exact(time)}});
  }
  void text(TensorBoardWriter& writer, int run, const std::string& tag, int64_t step, const std::string& text,
            double time) {
    writer.add_text(tag, step, text, time);
    events.push_back(
        {{"run", run}, {"kind", "text"}, {"tag", tag}, {"step", step}, {"text", text}, {"wall_time", exact(time)}});
  }
  void session(TensorBoardWriter& writer, int run, int64_t step, double time) {
    writer.start_session(step, time);
    events.push_back({{"run", run}, {"kind", "session_start"}, {"step", step}, {"wall_time", exact(time)}});
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lrhost_tensorboard_write LOGDIR EXPECTED_JSON\n");
    return 2;
  }
  try {
    Recorder record;
    nlohmann::json files = nlohmann::json::array();
    {
      TensorBoardWriter run1(argv[1]);
      record.session(run1, 1, 1, kBaseTime);
      for (int64_t step = 1; step <= 20; ++step) {
        for (const auto& [tag, value] : scalars(1, step))
          record.scalar(run1, 1, tag, step, value, kBaseTime + 0.25 * static_cast<double>(step));
        if (step == 1)
          record.text(run1, 1, "config", step,
                      "# Run 1\nGröße: 3 × 4 — ok ✓\n日本語\n\n| a | b |\n|---|---|\n| 1 | 2 |", kBaseTime + 0.5);
        if (step == 15)
          record.text(run1, 1, "config", step, "written by run 1 after step 12 (orphaned)", kBaseTime + 4);
      }
      files.push_back(run1.file().filename().string());
    }
    {
      // The resume: a new process would do the same, in a later second (a later file name).
      TensorBoardWriter run2(argv[1]);
      const double resumed = kBaseTime + 100;
      record.session(run2, 2, kResumeStep, resumed);
      for (int64_t step = kResumeStep; step <= 25; ++step) {
        for (const auto& [tag, value] : scalars(2, step))
          record.scalar(run2, 2, tag, step, value, resumed + 0.25 * static_cast<double>(step));
        if (step == kResumeStep) record.text(run2, 2, "config", step, "# Run 2\nresumed at step 12", resumed + 1);
      }
      files.push_back(run2.file().filename().string());
    }
    std::ofstream out(argv[2]);
    out << nlohmann::json{{"resume_step", kResumeStep}, {"files", files}, {"events", record.events}}.dump(1) << "\n";
    if (!out) throw lrhost::util::IoError(std::string("cannot write '") + argv[2] + "'");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "lrhost_tensorboard_write: %s\n", error.what());
    return 1;
  }
  return 0;
}
