#include "grammar/utf8.h"

namespace brisk::grammar {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

std::pair<uint32_t, size_t> decode_utf8(std::string_view text) {
  if (text.empty()) return {0, 0};
  uint8_t lead = uint8_t(text[0]);
  if (lead < 0x80) return {lead, 1};
  size_t len = lead >= 0xc2 && lead < 0xe0 ? 2 : lead >= 0xe0 && lead < 0xf0 ? 3 : lead >= 0xf0 && lead < 0xf5 ? 4 : 0;
  if (len == 0 || text.size() < len) return {0, 0};
  uint32_t cp = lead & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
  for (size_t i = 1; i < len; ++i) {
    uint8_t c = uint8_t(text[i]);
    if ((c & 0xc0) != 0x80) return {0, 0};
    cp = (cp << 6) | (c & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return {0, 0};
  return {cp, len};
}

}  // namespace brisk::grammar
