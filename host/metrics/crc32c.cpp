// CRC32C, one table lookup per byte (see crc32c.hpp).
#include "host/metrics/crc32c.hpp"

#include <array>

namespace lrhost::metrics {

namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;
constexpr uint32_t kTfRecordMaskDelta = 0xa282ead8u;

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

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) crc = kTable[(crc ^ static_cast<uint8_t>(c)) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t mask_crc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kTfRecordMaskDelta;
}

}  // namespace lrhost::metrics
