// The one live status line a training run keeps at the bottom of the terminal (rank 0 only): the
// text is redrawn in place with "\r" + erase-line, and every log record printed to the same
// terminal first erases it and then redraws it below itself, so log lines and the status line never
// mix. Off a terminal (CI, nohup, a pipe) nothing is drawn: `enabled()` is false and the caller logs
// plain lines instead.
#pragma once

#include <cstdio>
#include <string>

namespace lrhost::util {

class StatusLine {
 public:
  // The process-wide line on stderr; enabled when stderr is a terminal and TERM is not "dumb".
  static StatusLine& instance();

  bool enabled() const { return enabled_; }
  // Replaces the text and redraws it (a no-op when disabled). The text is cut to the terminal's width
  // so it never wraps onto a second line.
  void show(const std::string& text);
  // Removes the line for good (end of training).
  void clear();

  // For the console log sink: erase before a record, redraw after it. Both take the same lock the
  // sink holds, so a redraw never lands inside a record.
  void erase_for_log();
  void redraw_after_log();

  // Tests only: draw to `stream` as if it were a terminal `width` columns wide.
  StatusLine(std::FILE* stream, bool enabled, int width);

 private:
  void draw_locked();
  int columns() const;

  std::FILE* stream_;
  bool enabled_;
  int fixed_width_;  // 0: ask the terminal
  std::string text_;
  bool drawn_ = false;
};

}  // namespace lrhost::util
