#include "tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "tokenizer/utf8.h"

namespace brisk::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> symbols;
  std::unordered_map<char32_t, uint8_t> bytes;

  Tables() {
    // Printable Latin-1 bytes map to themselves; the rest go to U+0100 + k in byte order.
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      char32_t cp = printable ? static_cast<char32_t>(b) : next++;
      utf8::append(symbols[b], cp);
      bytes[cp] = static_cast<uint8_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_symbol(uint8_t b) { return tables().symbols[b]; }

void encode(std::string_view text, std::string& out) {
  const auto& symbols = tables().symbols;
  for (char c : text) out += symbols[static_cast<uint8_t>(c)];
}

bool decode(std::string_view token, std::string& out) {
  const auto& bytes = tables().bytes;
  for (size_t i = 0; i < token.size();) {
    size_t n = utf8::sequence_length(token, i);
    if (n == 0) return false;
    char32_t cp = utf8::decode(token, i);
    auto it = bytes.find(cp);
    if (it == bytes.end()) return false;
    out.push_back(static_cast<char>(it->second));
  }
  return true;
}

}  // namespace brisk::byte_level
