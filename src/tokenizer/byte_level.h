// GPT-2's byte-to-unicode alphabet: every byte maps to one printable code point so that
// byte-level BPE vocabularies are valid text (0x20 ' ' -> U+0120 'Ġ', 0x0A -> U+010A 'Ċ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace brisk::byte_level {

// The UTF-8 encoding of the code point standing for byte b.
const std::string& byte_to_symbol(uint8_t b);

// Appends the symbols of every byte of text.
void encode(std::string_view text, std::string& out);

// Maps each code point of a byte-level token back to its byte. Returns false (leaving out
// unspecified) when some code point is not in the alphabet, e.g. an added token like "你好".
bool decode(std::string_view token, std::string& out);

}  // namespace brisk::byte_level
