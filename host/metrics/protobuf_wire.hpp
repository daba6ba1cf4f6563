// The few protobuf wire-format encoders the TensorBoard event writer needs (varints, field tags,
// length-delimited fields, little-endian fixed32/fixed64). No protobuf library is packaged for the
// build, and an event is a handful of fields, so messages are built by appending to a std::string:
// a nested message is encoded into its own string first and then appended as a length-delimited
// field. Only encoding; nothing here parses.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lrhost::metrics::wire {

// The wire types of the protobuf encoding (the low 3 bits of a field's tag).
enum class WireType : uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

// Base-128 varint, least significant group first (300 -> 0xAC 0x02).
void put_varint(std::string& out, uint64_t value);
// A field's key: (field_number << 3) | wire_type, as a varint.
void put_tag(std::string& out, uint32_t field_number, WireType type);
// 4 or 8 bytes, little endian (also the TFRecord length and CRC encodings).
void put_fixed32(std::string& out, uint32_t value);
void put_fixed64(std::string& out, uint64_t value);

// Whole fields. Integers (int64, int32, enums) are varints of their two's complement, so a
// negative int64 takes 10 bytes, as protobuf does for int64 (not sint64).
void put_varint_field(std::string& out, uint32_t field_number, int64_t value);
// string, bytes and embedded messages (already encoded).
void put_bytes_field(std::string& out, uint32_t field_number, std::string_view bytes);
void put_double_field(std::string& out, uint32_t field_number, double value);
void put_float_field(std::string& out, uint32_t field_number, float value);

}  // namespace lrhost::metrics::wire
