// Shared by the reader fuzz targets: a scratch folder per fuzzing process (readers that only take a
// path get the fuzzer's bytes as a file in it) and the rule every target checks: a reader may reject
// its input only with an lrhost error (util::Error and subclasses, a message naming the file). Any
// other exception escapes LLVMFuzzerTestOneInput, which libFuzzer reports as a crash.
#pragma once
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "host/util/error.hpp"

namespace lrhost::fuzz {

// One folder per process, made on first use; inputs overwrite the same files, so nothing piles up.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "lrhost-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a scratch folder");
    // Readers warn about odd but legal input; a warning per execution would only slow fuzzing down.
    spdlog::set_level(spdlog::level::off);
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline void write_bytes(const std::filesystem::path& file, const uint8_t* data, std::size_t size) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// Runs `read`; an lrhost error is the expected answer to bad input, anything else propagates.
// LRHOST_FUZZ_VERBOSE=1 prints each rejection and each success, to check that a seed reaches the
// reader's successful path (run the target on single files: fuzz_<target> corpus/<target>/*).
template <typename Read>
void expect_clean(Read&& read) {
  static const bool verbose = std::getenv("LRHOST_FUZZ_VERBOSE") != nullptr;
  try {
    read();
    if (verbose) std::fprintf(stderr, "fuzz: accepted\n");
  } catch (const util::Error& error) {
    if (verbose) std::fprintf(stderr, "fuzz: rejected: %s\n", error.what());
  }
}

}  // namespace lrhost::fuzz
