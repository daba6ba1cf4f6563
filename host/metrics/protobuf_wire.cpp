// Protobuf wire-format encoders (see protobuf_wire.hpp).
#include "host/metrics/protobuf_wire.hpp"

#include <bit>

namespace lrhost::metrics::wire {

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_tag(std::string& out, uint32_t field_number, WireType type) {
  put_varint(out, (static_cast<uint64_t>(field_number) << 3) | static_cast<uint64_t>(type));
}

// Byte by byte, so the output is little endian whatever the host's byte order.
void put_fixed32(std::string& out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
}

void put_fixed64(std::string& out, uint64_t value) {
  for (int shift = 0; shift < 64; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
}

void put_varint_field(std::string& out, uint32_t field_number, int64_t value) {
  put_tag(out, field_number, WireType::varint);
  put_varint(out, static_cast<uint64_t>(value));
}

void put_bytes_field(std::string& out, uint32_t field_number, std::string_view bytes) {
  put_tag(out, field_number, WireType::length_delimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void put_double_field(std::string& out, uint32_t field_number, double value) {
  put_tag(out, field_number, WireType::fixed64);
  put_fixed64(out, std::bit_cast<uint64_t>(value));
}

void put_float_field(std::string& out, uint32_t field_number, float value) {
  put_tag(out, field_number, WireType::fixed32);
  put_fixed32(out, std::bit_cast<uint32_t>(value));
}

}  // namespace lrhost::metrics::wire
