// Bulk MT19937 draws for at::dropout's mask; see bernoulli_mask.hpp. Built with -O3 and without the
// precompiled header (CMakeLists.txt); the AVX2 variant is the same code compiled for AVX2.
#include "host/nn/bernoulli_mask.hpp"

#include <algorithm>
#include <cmath>

namespace lrhost::nn {

namespace {

constexpr int kStateWords = at::MERSENNE_STATE_N;  // 624
constexpr int kShift = at::MERSENNE_STATE_M;       // 397

[[gnu::always_inline]] inline uint32_t twist(uint32_t u, uint32_t v) {
  const uint32_t mixed = (u & at::UMASK) | (v & at::LMASK);
  return (mixed >> 1) ^ ((v & 1u) ? at::MATRIX_A : 0u);
}

// at::mt19937_engine::next_state as three loops without a carried dependence inside a vector's
// width (each word reads words ahead of it, or 227 behind it).
[[gnu::always_inline]] inline void next_state(uint32_t* s) {
  for (int j = 0; j < kStateWords - kShift; ++j) s[j] = s[j + kShift] ^ twist(s[j], s[j + 1]);
  for (int j = kStateWords - kShift; j < kStateWords - 1; ++j)
    s[j] = s[j + kShift - kStateWords] ^ twist(s[j], s[j + 1]);
  s[kStateWords - 1] = s[kShift - 1] ^ twist(s[kStateWords - 1], s[0]);
}

[[gnu::always_inline]] inline uint32_t temper(uint32_t y) {
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

// The next n outputs of the engine, which advances exactly as n calls of at::mt19937::operator()
// advance it: left_ counts the unread words plus one, and the twist comes when it reaches zero.
[[gnu::always_inline]] inline void draw_words(at::mt19937_data_pod& engine, uint32_t* out, int64_t n) {
  uint32_t* state = engine.state_.data();
  int64_t unread = engine.left_ - 1;
  int64_t next = engine.next_;
  while (n > 0) {
    if (unread == 0) {
      next_state(state);
      next = 0;
      unread = kStateWords;
    }
    const int64_t take = std::min(unread, n);
    for (int64_t i = 0; i < take; ++i) out[i] = temper(state[next + i]);
    out += take;
    n -= take;
    next += take;
    unread -= take;
  }
  engine.next_ = static_cast<uint32_t>(next);
  engine.left_ = static_cast<int>(unread + 1);
}

[[gnu::always_inline]] inline void fill(at::mt19937_data_pod& engine, float* mask, int64_t n, double keep) {
  const float kept_value = 1.0f / static_cast<float>(keep);
  constexpr uint64_t kLow53 = (uint64_t{1} << 53) - 1;
  // For an integer m < 2^53, m * 2^-53 < keep  <=>  m < keep * 2^53 (both exact)  <=>  m < ceil(keep * 2^53):
  // the comparison in integers, which vectorizes, instead of a conversion to double per element.
  const uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(keep, 53)));
  constexpr int64_t kChunk = 4096;  // elements per batch of words: 32 KiB of words on the stack
  uint32_t words[2 * kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t count = std::min(kChunk, n - start);
    draw_words(engine, words, 2 * count);
    float* out = mask + start;
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t value = (static_cast<uint64_t>(words[2 * i]) << 32) | words[2 * i + 1];
      out[i] = static_cast<float>((value & kLow53) < threshold) * kept_value;
    }
  }
}

__attribute__((target("avx2"))) void fill_avx2(at::mt19937_data_pod& engine, float* mask, int64_t n, double keep) {
  fill(engine, mask, n, keep);
}

void fill_baseline(at::mt19937_data_pod& engine, float* mask, int64_t n, double keep) {
  fill(engine, mask, n, keep);
}

}  // namespace

void fill_dropout_mask(at::mt19937_data_pod& engine, float* mask, int64_t n, double keep) {
  static const bool has_avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  }();
  if (has_avx2)
    fill_avx2(engine, mask, n, keep);
  else
    fill_baseline(engine, mask, n, keep);
}

}  // namespace lrhost::nn
