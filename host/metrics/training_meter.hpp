// Where a training run's time goes and how far it is: per-phase timings of each logged window
// (data wait, forward, backward, optimizer, checkpoint: whatever phase names the loop marks), the
// step time, this rank's samples/s, and the progress figures (k/N, %, steps/s, elapsed, ETA) that
// rank 0 shows as a live status line on a terminal and puts in every log line.
//
// The loop marks the end of each phase; the time since the previous mark is charged to it:
//   meter.mark("data"); ... forward ...; meter.mark("forward"); ...; meter.end_step(step);
// so the phases add up to the step time (time after the last mark of a step is charged to the next
// step's first phase; a window ends at its last mark). Every figure is a plain wall-clock reading of this rank;
// on an asynchronous device the caller passes a `synchronize` function so that a mark waits for the
// device's queued work (otherwise a GPU's forward would show up as the backward's time).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lrhost::util {
class StatusLine;
}

namespace lrhost::metrics {

struct TrainingMeterOptions {
  int64_t total_steps = 0;        // the last step of the run (N in k/N)
  int64_t first_step = 1;         // > 1 when resumed: rates and ETA count only this run's steps
  int64_t samples_per_step = 0;   // this rank's samples per step (batch size x accumulation)
  int64_t world_size = 1;         // to show the job's samples/s on the status line
  bool draw_status_line = false;  // rank 0 on a terminal
  double redraw_interval_s = 0.25;
  // FLOPs of training one sample (Policy::training_flops_per_sample; 0: not counted) and the device's
  // dense peak FLOP/s (0: unknown): the window's tflops (this rank's achieved rate) and mfu (tflops
  // over the peak).
  double flops_per_sample = 0;
  double peak_flops = 0;
  std::function<void()> synchronize;        // waits for the device, or empty
  util::StatusLine* status_line = nullptr;  // where to draw; null: the process's (tests draw elsewhere)
};

class TrainingMeter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TrainingMeter(TrainingMeterOptions options);
  ~TrainingMeter();  // finish()

  // Ends phase `phase`: the time since the previous mark (or the window start) is charged to it.
  void mark(const std::string& phase);
  // Ends training step `step`: counts it, and redraws the status line when due.
  void end_step(int64_t step);
  // The loop is over: removes the status line (later log lines print without it).
  void finish();
  // The loss shown on the status line (the last logged one). Redraws the line at once: the step's
  // end_step drew it before the loss of that step was logged, and the line must not keep showing the
  // previous window's loss until the next redraw (at the last step there is none).
  void set_last_loss(double loss);

  // The window since the previous call, per step: `<phase>_s` for every marked phase, `step_s`,
  // `samples_per_s` (this rank), `tflops` and `mfu` (when counted, above) and `peak_rss_gib` (this
  // process's peak resident memory); starts a
  // new window. Empty when no step ended in the window.
  std::map<std::string, double> take_window();

  // "step 150/2000 (7.5%) | 3.21 steps/s | 25.7 samples/s | elapsed 0:47 | ETA 9:36 | loss 0.8123"
  std::string progress_text(int64_t step) const;
  double elapsed_s() const;
  double eta_s(int64_t step) const;  // < 0 when not yet known
  double steps_per_s() const;        // over this run's steps so far

 private:
  TrainingMeterOptions options_;
  util::StatusLine& status_line() const;

  Clock::time_point start_, window_start_, last_mark_, last_draw_;
  std::vector<std::pair<std::string, double>> window_phases_;  // in first-marked order
  int64_t window_steps_ = 0;
  int64_t steps_done_ = 0;  // this run's steps
  int64_t last_step_ = 0;
  double last_loss_ = 0;
  bool has_loss_ = false;
};

// "0:47", "9:36", "1:02:03"
std::string format_duration(double seconds);

}  // namespace lrhost::metrics
