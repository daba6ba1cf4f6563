// Bytes the process's malloc currently has handed out and not taken back, read from whichever
// allocator the process actually runs on: jemalloc (the lrhost binary links it, see CMakeLists.txt
// LRHOST_WITH_JEMALLOC; found at run time through its mallctl, so code built without it still works)
// or the C library's malloc (mallinfo2). Under jemalloc glibc's counters stay at zero, which is why
// asking glibc alone is wrong. A whole-process figure: it includes math libraries' private buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lrhost::util {

// jemalloc's mallctl when some loaded object provides it (looked up by name, never linked, so code
// built without jemalloc still works); nullptr under the C library's malloc.
using MallctlFn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
MallctlFn jemalloc_mallctl();

// Live bytes in malloc'ed blocks, mmapped ones included.
int64_t live_heap_bytes();

// "jemalloc" or "glibc": which allocator live_heap_bytes() asked.
std::string_view heap_allocator_name();

}  // namespace lrhost::util
