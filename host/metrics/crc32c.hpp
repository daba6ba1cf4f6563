// The masked CRC32C that TFRecord files store, for TensorBoard event files (CRC32C itself is
// util/crc32c.hpp, shared with checkpoint checksums).
#pragma once
#include <cstdint>
#include <string_view>

#include "host/util/crc32c.hpp"

namespace lrhost::metrics {

using util::crc32c;

// TFRecord's masked CRC: rotate right by 15 bits and add a constant. TensorFlow masks the CRCs it
// stores because a CRC computed over data that itself contains CRCs is weak.
inline uint32_t mask_crc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// mask_crc32c(crc32c(bytes)): what a TFRecord header or footer holds.
inline uint32_t masked_crc32c(std::string_view bytes) {
  return mask_crc32c(crc32c(bytes));
}

}  // namespace lrhost::metrics
