// CRC32C: the SSE4.2 crc32 instruction where the CPU has it, else one table lookup per byte (see crc32c.hpp).
#include "host/util/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define LRHOST_CRC32C_SSE42 1
#endif

namespace lrhost::util {

namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

// table[b] = CRC of the single byte b (bit by bit, least significant bit first: the reflected form).
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ kCastagnoliReflected : crc >> 1;
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

// Both work on the un-inverted state (the caller applies the initial value and the final xor).
uint32_t table_update(uint32_t state, const unsigned char* p, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) state = kTable[(state ^ p[i]) & 0xFFu] ^ (state >> 8);
  return state;
}

#ifdef LRHOST_CRC32C_SSE42
__attribute__((target("sse4.2"))) uint32_t sse42_update(uint32_t state, const unsigned char* p, std::size_t size) {
  uint64_t wide = state;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    wide = _mm_crc32_u64(wide, word);
  }
  state = static_cast<uint32_t>(wide);
  for (; size > 0; --size, ++p) state = _mm_crc32_u8(state, *p);
  return state;
}

bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t state = crc ^ 0xFFFFFFFFu;
#ifdef LRHOST_CRC32C_SSE42
  if (has_sse42()) return sse42_update(state, p, size) ^ 0xFFFFFFFFu;
#endif
  return table_update(state, p, size) ^ 0xFFFFFFFFu;
}

uint32_t crc32c(std::string_view bytes) {
  return crc32c_extend(0, bytes.data(), bytes.size());
}

}  // namespace lrhost::util
