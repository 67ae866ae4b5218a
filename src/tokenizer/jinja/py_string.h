// Python str semantics over UTF-8 std::string: templates index, slice, strip and case-map by
// code point, as Python does, while brisk keeps text as UTF-8 bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::jinja {

// Invalid UTF-8 bytes decode to U+FFFD so no input makes these functions throw.
std::u32string utf8_decode(std::string_view text);
std::string utf8_encode(std::u32string_view text);
void utf8_append(std::string& out, char32_t cp);
// Number of code points (Python len()).
size_t utf8_length(std::string_view text);

// Python str.isspace() for one code point.
bool py_is_space(char32_t cp);

// str.strip/lstrip/rstrip; `chars` absent means whitespace.
std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                     bool right);
// str.split(sep, maxsplit); sep absent splits on runs of whitespace. maxsplit < 0 is unlimited.
std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep,
                                  int64_t maxsplit);
// str.replace(old, new, count); count < 0 replaces all.
std::string py_replace(std::string_view text, std::string_view from, std::string_view to,
                       int64_t count);
std::string py_upper(std::string_view text);
std::string py_lower(std::string_view text);
// str.title(): uppercase after a non-letter, lowercase after a letter.
std::string py_title(std::string_view text);
// str.capitalize(): first code point upper, the rest lower.
std::string py_capitalize(std::string_view text);
// str.find / str.count over code points (find returns a code point index or -1).
int64_t py_find(std::string_view text, std::string_view needle);
int64_t py_count(std::string_view text, std::string_view needle);
// repr() of a str: single quotes unless the text has ' and no ".
std::string py_repr_string(std::string_view text);

}  // namespace brisk::jinja
