// Progress of a closed-loop evaluation; see eval_progress.hpp.
#include "host/metrics/eval_progress.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "host/metrics/training_meter.hpp"
#include "host/util/status_line.hpp"

namespace lrhost::metrics {

EvalProgress::EvalProgress(EvalProgressOptions options) : options_(options) {
  start_ = Clock::now();
  last_draw_ = start_ - std::chrono::hours(1);
  const int64_t world = std::max<int64_t>(options_.world_size, 1);
  // Episode e goes to rank e % world: rank r plays ceil((episodes - r) / world) of them.
  rank_total_ = options_.episodes > options_.rank ? (options_.episodes - options_.rank + world - 1) / world : 0;
}

EvalProgress::~EvalProgress() {
  finish();
}

void EvalProgress::finish() {
  if (options_.draw_status_line) util::StatusLine::instance().clear();
  options_.draw_status_line = false;
  options_.log_lines = false;
}

int64_t EvalProgress::episodes_done() const {
  if (done_ >= rank_total_) return options_.episodes;  // this rank's last one: the others are as far
  return std::min(options_.episodes, done_ * std::max<int64_t>(options_.world_size, 1));
}

void EvalProgress::episode_done(bool success) {
  ++done_;
  successes_ += success ? 1 : 0;
  if (options_.draw_status_line) {
    auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_draw_).count() < options_.redraw_interval_s && done_ < rank_total_)
      return;
    last_draw_ = now;
    util::StatusLine::instance().show(progress_text());
  } else if (options_.log_lines && rank_total_ > 0) {
    // A line when the count crosses the next tenth of this rank's episodes (each one for short runs).
    const int64_t tenths = done_ * 10 / rank_total_;
    if (tenths > logged_tenths_) {
      logged_tenths_ = tenths;
      spdlog::info("eval: {}", progress_text());
    }
  }
}

std::string EvalProgress::progress_text() const {
  const int64_t done = episodes_done();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const auto percent_of = [](int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  };
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  std::string text = fmt::format("episode {}/{} ({:.1f}%) | success {}/{}", done, options_.episodes,
                                 percent_of(done, options_.episodes), successes_, done_);
  if (done_ > 0) text += fmt::format(" ({:.1f}%)", percent_of(successes_, done_));
  if (options_.world_size > 1) text += fmt::format(" on rank {}", options_.rank);
  // The ETA from this rank's pace over the episodes it has left.
  const double eta = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(rank_total_ - done_) : -1;
  text += fmt::format(" | {:.2f} episodes/s | elapsed {} | ETA {}", rate, format_duration(elapsed),
                      eta < 0 ? std::string("?") : format_duration(eta));
  return text;
}

}  // namespace lrhost::metrics
