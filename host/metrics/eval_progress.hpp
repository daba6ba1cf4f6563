// How far a closed-loop evaluation is: episodes done of the total, the success rate so far, elapsed
// time and ETA, shown by rank 0 as the live status line on a terminal (as training shows its step)
// and, off a terminal (CI, nohup, a pipe), as a log line each tenth of the episodes, so a long
// `lrhost eval` never looks hung.
//
// Episodes are dealt round-robin to the ranks, and each rank knows only its own: the figures are this
// rank's successes, and the episodes done by the job estimated as this rank's count times the world
// size (the ranks play in step), which is exact when one process evaluates.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace lrhost::metrics {

struct EvalProgressOptions {
  int64_t episodes = 0;  // of the whole evaluation, all ranks
  int64_t rank = 0, world_size = 1;
  bool draw_status_line = false;  // rank 0 on a terminal
  bool log_lines = false;         // rank 0 off a terminal
  double redraw_interval_s = 0.25;
};

class EvalProgress {
 public:
  using Clock = std::chrono::steady_clock;

  explicit EvalProgress(EvalProgressOptions options);
  ~EvalProgress();  // finish()

  // This rank finished another episode; `success` as the environment judged it.
  void episode_done(bool success);
  // The evaluation is over: removes the status line.
  void finish();

  // "episode 12/50 (24.0%) | success 9/12 (75.0%) | 0.40 episodes/s | elapsed 0:30 | ETA 1:35";
  // "success 4/6 on rank 0" when several ranks share the episodes.
  std::string progress_text() const;
  int64_t episodes_done() const;  // by the job (estimated with several ranks)
  int64_t this_rank_episodes() const { return rank_total_; }

 private:
  EvalProgressOptions options_;
  Clock::time_point start_, last_draw_;
  int64_t rank_total_ = 0;            // the episodes this rank plays
  int64_t done_ = 0, successes_ = 0;  // this rank's so far
  int64_t logged_tenths_ = 0;
};

}  // namespace lrhost::metrics
