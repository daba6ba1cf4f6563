// CRC32C (Castagnoli) and the masked form TFRecord files store, for TensorBoard event files. No
// CRC32C library is packaged for the build, and the event writer needs a few bytes per second, so a
// plain table-driven implementation is enough.
#pragma once
#include <cstdint>
#include <string_view>

namespace lrhost::metrics {

// CRC32C of `bytes`: reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF
// (crc32c("123456789") == 0xE3069283).
uint32_t crc32c(std::string_view bytes);

// TFRecord's masked CRC: rotate right by 15 bits and add a constant. TensorFlow masks the CRCs it
// stores because a CRC computed over data that itself contains CRCs is weak.
uint32_t mask_crc32c(uint32_t crc);

// mask_crc32c(crc32c(bytes)): what a TFRecord header or footer holds.
inline uint32_t masked_crc32c(std::string_view bytes) {
  return mask_crc32c(crc32c(bytes));
}

}  // namespace lrhost::metrics
