// UTF-8 helpers shared by the tokenizer pipeline: validation with the same replacement rule as
// Rust's String::from_utf8_lossy and Python's errors="replace" (one U+FFFD per maximal
// ill-formed subpart), code point iteration, and the character classes HF's added-token
// matching uses.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brisk::utf8 {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence that starts at s[pos]; 0 when s[pos] does not start one.
// *subpart_length receives the length of the maximal ill-formed subpart in that case (>= 1).
size_t sequence_length(std::string_view s, size_t pos, size_t* subpart_length = nullptr);

bool is_valid(std::string_view s);

// Replaces every maximal ill-formed subpart by U+FFFD; valid input is returned unchanged.
std::string to_valid(std::string_view s);

// Number of trailing bytes that form a truncated but so far well-formed sequence (0..3):
// bytes a streaming decoder must hold back because more bytes may complete them.
size_t incomplete_suffix_length(std::string_view s);

// Decodes the code point at s[pos] of a valid string and advances pos past it.
char32_t decode(std::string_view s, size_t& pos);
void append(std::string& out, char32_t cp);

// Rust's char::is_whitespace (the Unicode White_Space property).
bool is_whitespace(char32_t cp);
// Rust regex's Unicode \w (letters, marks, decimal digits, connector punctuation).
bool is_word_char(char32_t cp);

}  // namespace brisk::utf8
