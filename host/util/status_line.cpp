// Drawing and erasing the terminal status line; see status_line.hpp.
#include "host/util/status_line.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace lrhost::util {
namespace {
std::mutex& line_mutex() {
  static std::mutex mutex;
  return mutex;
}

bool stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}
}  // namespace

StatusLine& StatusLine::instance() {
  static StatusLine line(stderr, stderr_is_terminal(), 0);
  return line;
}

StatusLine::StatusLine(std::FILE* stream, bool enabled, int width)
    : stream_(stream), enabled_(enabled), fixed_width_(width) {}

int StatusLine::columns() const {
  if (fixed_width_ > 0) return fixed_width_;
  winsize size{};
  if (::ioctl(::fileno(stream_), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 100;
}

void StatusLine::draw_locked() {
  // One column short of the width: a line that fills the last column makes some terminals wrap.
  std::size_t width = static_cast<std::size_t>(std::max(columns() - 1, 10));
  std::string shown = text_.size() > width ? text_.substr(0, width) : text_;
  std::fprintf(stream_, "\r\033[K%s", shown.c_str());
  std::fflush(stream_);
  drawn_ = true;
}

void StatusLine::show(const std::string& text) {
  if (!enabled_) return;
  std::lock_guard lock(line_mutex());
  text_ = text;
  draw_locked();
}

void StatusLine::clear() {
  if (!enabled_) return;
  std::lock_guard lock(line_mutex());
  if (drawn_) {
    std::fputs("\r\033[K", stream_);
    std::fflush(stream_);
  }
  text_.clear();
  drawn_ = false;
}

void StatusLine::erase_for_log() {
  if (!enabled_) return;
  line_mutex().lock();
  if (drawn_) {
    std::fputs("\r\033[K", stream_);
    std::fflush(stream_);
  }
}

void StatusLine::redraw_after_log() {
  if (!enabled_) return;
  if (!text_.empty()) draw_locked();
  line_mutex().unlock();
}

}  // namespace lrhost::util
