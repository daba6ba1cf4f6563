// numpy SeedSequence pool mixing and state generation; see seed_sequence.hpp.
#include "host/data/seed_sequence.hpp"

#include <array>

namespace lrhost::data {
namespace {
constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kXShift = 16;
constexpr std::size_t kPoolSize = 4;

// All arithmetic is modulo 2^32, as numpy does with uint32 arrays.
uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

std::vector<uint32_t> to_words(const std::vector<uint64_t>& entropy) {
  std::vector<uint32_t> words;
  for (uint64_t value : entropy) {
    if (value == 0) {
      words.push_back(0);
      continue;
    }
    while (value) {
      words.push_back(static_cast<uint32_t>(value & 0xffffffffu));
      value >>= 32;
    }
  }
  return words;
}
}  // namespace

uint64_t seed_sequence_uint64(const std::vector<uint64_t>& entropy) {
  std::vector<uint32_t> words = to_words(entropy);
  std::array<uint32_t, kPoolSize> pool{};
  uint32_t hash_const = kInitA;
  for (std::size_t i = 0; i < kPoolSize; ++i) pool[i] = hashmix(i < words.size() ? words[i] : 0u, hash_const);
  for (std::size_t src = 0; src < kPoolSize; ++src)
    for (std::size_t dst = 0; dst < kPoolSize; ++dst)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
  for (std::size_t src = kPoolSize; src < words.size(); ++src)
    for (std::size_t dst = 0; dst < kPoolSize; ++dst) pool[dst] = mix(pool[dst], hashmix(words[src], hash_const));

  // generate_state(1, uint64) draws two 32-bit words and views them as one little-endian uint64.
  uint32_t state_const = kInitB;
  std::array<uint32_t, 2> state{};
  for (std::size_t i = 0; i < state.size(); ++i) {
    uint32_t value = pool[i % kPoolSize];
    value ^= state_const;
    state_const *= kMultB;
    value *= state_const;
    value ^= value >> kXShift;
    state[i] = value;
  }
  return static_cast<uint64_t>(state[0]) | (static_cast<uint64_t>(state[1]) << 32);
}

}  // namespace lrhost::data
