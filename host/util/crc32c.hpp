// CRC32C (Castagnoli), the one implementation in the tree: TensorBoard's event records
// (metrics/crc32c.hpp adds TFRecord's mask) and checkpoint checksum manifests (io/checksum_manifest.hpp).
// No CRC32C library is packaged for the build; x86-64 CPUs with SSE4.2 compute it in hardware (the
// crc32 instruction, several GB/s), others fall back to a table lookup per byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lrhost::util {

// CRC32C of `bytes`: reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF
// (crc32c("123456789") == 0xE3069283).
uint32_t crc32c(std::string_view bytes);

// Continues a CRC32C over more bytes: crc32c_extend(crc32c(a), b) == crc32c(a + b), and
// crc32c_extend(0, data, size) == crc32c of those bytes.
uint32_t crc32c_extend(uint32_t crc, const void* data, std::size_t size);

}  // namespace lrhost::util
