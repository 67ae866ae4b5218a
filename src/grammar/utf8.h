// UTF-8 helpers for the grammar module.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace brisk::grammar {

// Appends the UTF-8 encoding of code point `cp`.
void append_utf8(std::string& out, uint32_t cp);
// The code point at the start of `text` and its length in bytes; length 0 when the bytes are
// not well-formed UTF-8.
std::pair<uint32_t, size_t> decode_utf8(std::string_view text);

// xgrammar's reading of a lead byte: 0x00-0x7f one byte, 0xc0-0xdf two, 0xe0-0xef three,
// 0xf0-0xf7 four (overlong and surrogate forms are not rejected), anything else invalid (0).
inline int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xc0) return 0;
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  if (lead < 0xf8) return 4;
  return 0;
}

}  // namespace brisk::grammar
