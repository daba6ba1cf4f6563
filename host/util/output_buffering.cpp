// Line-buffered stdout for every lrhost process; see output_buffering.hpp.
#include "host/util/output_buffering.hpp"

#include <cstdio>

namespace lrhost::util {

void line_buffer_stdout() {
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  std::setvbuf(stderr, nullptr, _IONBF, 0);
}

}  // namespace lrhost::util
