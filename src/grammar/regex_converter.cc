#include "grammar/regex_converter.h"

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/utf8.h"

namespace brisk::grammar {

namespace {

constexpr uint32_t kMaxCodepoint = 0x10ffff;
// Groups are parsed recursively: deeper nesting (only hostile input has it) would overflow the
// stack.
constexpr int kMaxGroupDepth = 200;

const std::vector<CharRange>& digit_ranges() {
  static const std::vector<CharRange> r{{'0', '9'}};
  return r;
}
const std::vector<CharRange>& word_ranges() {
  static const std::vector<CharRange> r{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  return r;
}
// \s as ECMAScript defines it (what xgrammar uses).
const std::vector<CharRange>& space_ranges() {
  static const std::vector<CharRange> r = normalize_ranges(
      {{'\t', '\r'}, {' ', ' '}, {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a}, {0x2028, 0x2029},
       {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff}});
  return r;
}

std::vector<CharRange> complement(const std::vector<CharRange>& ranges) {
  std::vector<CharRange> out;
  uint32_t next = 0;
  for (const CharRange& r : normalize_ranges(ranges)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

class RegexParser {
 public:
  RegexParser(Grammar& g, std::string_view regex) : g_(g), re_(regex) {}

  int32_t parse() {
    if (peek() == '^') ++pos_;
    int32_t expr = parse_alternation();
    if (pos_ < re_.size()) {
      if (peek() == ')') fail("unbalanced ')'");
      fail("unexpected character");
    }
    return expr;
  }

 private:
  [[noreturn]] void fail(const std::string& what, ErrorCode code = ErrorCode::kInvalidArgument) const {
    throw_error(code, "regex {:?}: position {}: {}", std::string(re_), pos_, what);
  }
  char peek(size_t ahead = 0) const { return pos_ + ahead < re_.size() ? re_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= re_.size(); }

  int32_t parse_alternation() {
    std::vector<int32_t> alternatives{parse_concat()};
    while (peek() == '|') {
      ++pos_;
      alternatives.push_back(parse_concat());
    }
    return g_.choice(std::move(alternatives));
  }

  int32_t parse_concat() {
    std::vector<int32_t> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (!at_end() && peek() != '|' && peek() != ')') fail("'$' is only supported at the end", ErrorCode::kUnsupported);
        continue;
      }
      if (peek() == '^') {
        if (!items.empty()) fail("'^' is only supported at the start", ErrorCode::kUnsupported);
        ++pos_;
        continue;
      }
      items.push_back(parse_quantified(parse_atom()));
    }
    return g_.sequence(std::move(items));
  }

  int64_t parse_number() {
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a number in the repetition range");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > 100000) fail("repetition count too large");
      ++pos_;
    }
    return value;
  }

  int32_t parse_quantified(int32_t atom) {
    while (true) {
      char c = peek();
      int64_t min = 0, max = -1;
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        min = 1;
      } else if (c == '?') {
        ++pos_;
        max = 1;
      } else if (c == '{' && peek(1) >= '0' && peek(1) <= '9') {
        ++pos_;
        min = max = parse_number();
        if (peek() == ',') {
          ++pos_;
          max = peek() == '}' ? -1 : parse_number();
        }
        if (peek() != '}') fail("expected '}' to close the repetition range");
        ++pos_;
        if (max != -1 && max < min) fail("repetition range is reversed");
      } else {
        return atom;
      }
      if (peek() == '?') ++pos_;  // lazy: the same language
      if (peek() == '+') fail("possessive quantifiers are not supported", ErrorCode::kUnsupported);
      atom = g_.repeat(atom, int32_t(min), int32_t(max));
    }
  }

  int32_t parse_atom() {
    char c = peek();
    if (c == '(') {
      if (++depth_ > kMaxGroupDepth) fail(fmt::format("groups nest deeper than {}", kMaxGroupDepth));
      ++pos_;
      if (peek() == '?') {
        if (peek(1) == ':') {
          pos_ += 2;
        } else if (peek(1) == '=' || peek(1) == '!' || (peek(1) == '<' && (peek(2) == '=' || peek(2) == '!'))) {
          fail("lookaround assertions are not supported", ErrorCode::kUnsupported);
        } else if (peek(1) == 'P' && peek(2) == '<') {
          pos_ += 3;
          skip_group_name();
        } else if (peek(1) == '<') {
          pos_ += 2;
          skip_group_name();
        } else {
          fail("group flags are not supported", ErrorCode::kUnsupported);
        }
      }
      int32_t inner = parse_alternation();
      if (peek() != ')') fail("missing ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return g_.char_class({{0, kMaxCodepoint}}, false);
    }
    if (c == '*' || c == '+' || c == '?' || (c == '{' && peek(1) >= '0' && peek(1) <= '9')) fail("nothing to repeat");
    if (c == '\\') {
      std::vector<CharRange> ranges;
      bool negated = false;
      if (parse_class_escape(ranges, negated)) return g_.char_class(std::move(ranges), negated);
      std::string bytes;
      append_utf8(bytes, ranges[0].lo);
      return g_.bytes(bytes);
    }
    auto [cp, len] = decode_utf8(re_.substr(pos_));
    if (len == 0) fail("invalid UTF-8");
    pos_ += len;
    return g_.bytes(re_.substr(pos_ - len, len));
  }

  void skip_group_name() {
    while (!at_end() && peek() != '>') ++pos_;
    if (at_end()) fail("unterminated group name");
    ++pos_;
  }

  uint32_t parse_hex(size_t digits) {
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      char h = peek();
      int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                              : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) fail("bad hex escape");
      value = value * 16 + uint32_t(d);
      ++pos_;
    }
    return value;
  }

  // Parses an escape at pos_ ('\\'). Returns true for a class (\d \w \s and negations, in
  // `ranges` with `negated`), false for one code point (in ranges[0].lo).
  bool parse_class_escape(std::vector<CharRange>& ranges, bool& negated) {
    ++pos_;
    if (at_end()) fail("trailing backslash");
    char e = peek();
    ++pos_;
    negated = false;
    switch (e) {
      case 'd': ranges = digit_ranges(); return true;
      case 'w': ranges = word_ranges(); return true;
      case 's': ranges = space_ranges(); return true;
      case 'D': ranges = digit_ranges(); negated = true; return true;
      case 'W': ranges = word_ranges(); negated = true; return true;
      case 'S': ranges = space_ranges(); negated = true; return true;
      default: break;
    }
    uint32_t cp = 0;
    switch (e) {
      case 'n': cp = '\n'; break;
      case 'r': cp = '\r'; break;
      case 't': cp = '\t'; break;
      case 'f': cp = '\f'; break;
      case 'v': cp = '\v'; break;
      case '0': cp = 0; break;
      case 'x': cp = parse_hex(2); break;
      case 'u':
        if (peek() == '{') {
          ++pos_;
          size_t start = pos_;
          while (!at_end() && peek() != '}') ++pos_;
          pos_ = start;
          cp = parse_hex(re_.find('}', start) - start);
          ++pos_;
        } else {
          cp = parse_hex(4);
        }
        break;
      case 'b': case 'B': --pos_; fail("word boundaries are not supported", ErrorCode::kUnsupported);
      default:
        if (e >= '1' && e <= '9') {
          --pos_;
          fail("backreferences are not supported", ErrorCode::kUnsupported);
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          --pos_;
          fail(fmt::format("unknown escape '\\{}'", e));
        }
        cp = uint8_t(e);
    }
    if (cp > kMaxCodepoint) fail("code point out of range");
    ranges = {{cp, cp}};
    return false;
  }

  int32_t parse_class() {
    ++pos_;
    bool negated = peek() == '^';
    if (negated) ++pos_;
    std::vector<CharRange> ranges;
    bool first = true;
    while (true) {
      if (at_end()) fail("unterminated character class");
      if (peek() == ']' && !first) break;
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        std::vector<CharRange> escaped;
        bool escaped_negated = false;
        if (parse_class_escape(escaped, escaped_negated)) {
          if (escaped_negated) escaped = complement(escaped);
          ranges.insert(ranges.end(), escaped.begin(), escaped.end());
          continue;
        }
        lo = escaped[0].lo;
      } else {
        auto [cp, len] = decode_utf8(re_.substr(pos_));
        if (len == 0) fail("invalid UTF-8");
        pos_ += len;
        lo = cp;
      }
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
        ++pos_;
        if (peek() == '\\') {
          std::vector<CharRange> escaped;
          bool escaped_negated = false;
          if (parse_class_escape(escaped, escaped_negated)) fail("a class escape cannot end a range");
          hi = escaped[0].lo;
        } else {
          auto [cp, len] = decode_utf8(re_.substr(pos_));
          if (len == 0) fail("invalid UTF-8");
          pos_ += len;
          hi = cp;
        }
        if (hi < lo) fail("character class range is reversed");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return g_.char_class(std::move(ranges), negated);
  }

  Grammar& g_;
  std::string_view re_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open at pos_
};

}  // namespace

int32_t add_regex(Grammar& grammar, std::string_view regex, std::string_view) {
  return RegexParser(grammar, regex).parse();
}

Grammar regex_to_grammar(std::string_view regex) {
  Grammar g;
  int32_t root = g.rule_id("root");
  g.rules[root].body = add_regex(g, regex, "root");
  g.root = root;
  return g;
}

}  // namespace brisk::grammar
