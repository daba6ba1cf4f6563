// Live malloc bytes from jemalloc's statistics or glibc's mallinfo2; see heap_bytes.hpp.
#include "host/util/heap_bytes.hpp"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

namespace lrhost::util {

// The unit tests (plain glibc) and the binary (jemalloc) share this code.
MallctlFn jemalloc_mallctl() {
  static const auto fn = reinterpret_cast<MallctlFn>(dlsym(RTLD_DEFAULT, "mallctl"));
  return fn;
}

int64_t live_heap_bytes() {
  if (auto mallctl = jemalloc_mallctl()) {
    // jemalloc caches its statistics; writing "epoch" refreshes them before the read.
    uint64_t epoch = 1;
    size_t size = sizeof(epoch);
    mallctl("epoch", &epoch, &size, &epoch, sizeof(epoch));
    size_t allocated = 0;
    size = sizeof(allocated);
    if (mallctl("stats.allocated", &allocated, &size, nullptr, 0) == 0) return static_cast<int64_t>(allocated);
  }
  const struct mallinfo2 info = ::mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

std::string_view heap_allocator_name() {
  return jemalloc_mallctl() != nullptr ? "jemalloc" : "glibc";
}

}  // namespace lrhost::util
