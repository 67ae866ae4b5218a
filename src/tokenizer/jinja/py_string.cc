#include "tokenizer/jinja/py_string.h"

#include <utf8proc.h>

#include <fmt/format.h>

namespace brisk::jinja {

std::u32string utf8_decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                              static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::string utf8_encode(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) utf8_append(out, cp);
  return out;
}

size_t utf8_length(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

bool py_is_space(char32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x80) return false;
  if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) return true;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS;
}

namespace {

// Decodes the code point starting at byte `pos` (invalid bytes read as U+FFFD, one byte).
char32_t decode_at(std::string_view text, size_t pos, size_t* length) {
  unsigned char c = static_cast<unsigned char>(text[pos]);
  if (c < 0x80) {
    *length = 1;
    return c;
  }
  utf8proc_int32_t cp = 0;
  auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                            static_cast<utf8proc_ssize_t>(text.size() - pos), &cp);
  if (n <= 0) {
    *length = 1;
    return 0xFFFD;
  }
  *length = static_cast<size_t>(n);
  return static_cast<char32_t>(cp);
}

}  // namespace

std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                     bool right) {
  // Only the ends are decoded: templates strip long message contents.
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t cp) {
    return chars ? set.find(cp) != std::u32string::npos : py_is_space(cp);
  };
  size_t begin = 0, end = text.size();
  while (left && begin < end) {
    size_t length = 0;
    if (!strip_it(decode_at(text, begin, &length))) break;
    begin += length;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t length = 0;
    char32_t cp = decode_at(text, start, &length);
    // A truncated sequence decodes as one U+FFFD byte: strip byte by byte then.
    if (start + length != end) start = end - 1, cp = 0xFFFD;
    if (!strip_it(cp)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t pos = text.find(*sep, start);
      if (pos == std::string_view::npos) break;
      parts.emplace_back(text.substr(start, pos - start));
      start = pos + sep->size();
    }
    parts.emplace_back(text.substr(start));
    return parts;
  }
  std::u32string cps = utf8_decode(text);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && py_is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      // The remainder keeps its trailing whitespace, as Python's does.
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(i)));
      break;
    }
    size_t start = i;
    while (i < cps.size() && !py_is_space(cps[i])) ++i;
    parts.push_back(utf8_encode(std::u32string_view(cps).substr(start, i - start)));
  }
  return parts;
}

std::string py_replace(std::string_view text, std::string_view from, std::string_view to,
                       int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` around every code point.
    std::u32string cps = utf8_decode(text);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      utf8_append(out, cp);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t pos = text.find(from, start);
    if (pos == std::string_view::npos) break;
    out.append(text.substr(start, pos - start));
    out.append(to);
    start = pos + from.size();
    ++done;
  }
  out.append(text.substr(start));
  return out;
}

namespace {

template <typename F>
std::string map_code_points(std::string_view text, F f) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : utf8_decode(text)) utf8_append(out, f(cp));
  return out;
}

char32_t to_upper(char32_t cp) {
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}
char32_t to_lower(char32_t cp) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}
char32_t to_title(char32_t cp) {
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp)));
}
bool is_cased_letter(char32_t cp) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
         cat == UTF8PROC_CATEGORY_LT;
}

bool is_printable(char32_t cp) {
  if (cp == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string py_upper(std::string_view text) { return map_code_points(text, to_upper); }
std::string py_lower(std::string_view text) { return map_code_points(text, to_lower); }

std::string py_title(std::string_view text) {
  std::string out;
  bool previous_cased = false;
  for (char32_t cp : utf8_decode(text)) {
    utf8_append(out, previous_cased ? to_lower(cp) : to_title(cp));
    previous_cased = is_cased_letter(cp);
  }
  return out;
}

std::string py_capitalize(std::string_view text) {
  std::string out;
  bool first = true;
  for (char32_t cp : utf8_decode(text)) {
    utf8_append(out, first ? to_title(cp) : to_lower(cp));
    first = false;
  }
  return out;
}

int64_t py_find(std::string_view text, std::string_view needle) {
  size_t pos = text.find(needle);
  if (pos == std::string_view::npos) return -1;
  return static_cast<int64_t>(utf8_length(text.substr(0, pos)));
}

int64_t py_count(std::string_view text, std::string_view needle) {
  if (needle.empty()) return static_cast<int64_t>(utf8_length(text)) + 1;
  int64_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

std::string py_repr_string(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : utf8_decode(text)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x7F && cp >= 0x20) {
      out += static_cast<char>(cp);
    } else if (!is_printable(cp)) {
      if (cp < 0x100) out += fmt::format("\\x{:02x}", static_cast<uint32_t>(cp));
      else if (cp < 0x10000) out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
      else out += fmt::format("\\U{:08x}", static_cast<uint32_t>(cp));
    } else {
      utf8_append(out, cp);
    }
  }
  out += quote;
  return out;
}

}  // namespace brisk::jinja
