#include "grammar/ebnf_parser.h"

#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/regex_converter.h"
#include "grammar/utf8.h"

namespace brisk::grammar {

namespace {

// Groups are parsed recursively: deeper nesting (only hostile input has it) would overflow the
// stack.
constexpr int kMaxGroupDepth = 200;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root_rule) {
    skip_space();
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space();
    }
    for (const Rule& rule : g_.rules) {
      if (rule.body < 0) {
        auto [line, col] = reference_position_.at(rule.name);
        fail_at(line, col, fmt::format("rule '{}' is used but never defined", rule.name));
      }
    }
    g_.root = g_.find_rule(root_rule);
    if (g_.root < 0) fail(fmt::format("the grammar has no rule named '{}' (the start rule)", root_rule));
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail_at(int line, int col, const std::string& message) const {
    throw_error(ErrorCode::kInvalidArgument, "grammar: line {}, column {}: {}", line, col, message);
  }
  [[noreturn]] void fail(const std::string& message) const {
    auto [line, col] = line_col(pos_);
    fail_at(line, col, message);
  }
  std::pair<int, int> line_col(size_t pos) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void skip_space() {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (start == pos_) fail("expected a rule name");
    return text_.substr(start, pos_ - start);
  }

  // True when the text at pos_ starts a new rule: `name ::=`.
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  void parse_rule() {
    std::string_view name = parse_name();
    int32_t id = g_.rule_id(name);
    if (g_.rules[id].body >= 0) fail(fmt::format("rule '{}' is defined twice", name));
    skip_space();
    if (text_.substr(pos_, 3) != "::=") fail(fmt::format("expected '::=' after rule name '{}'", name));
    pos_ += 3;
    skip_space();
    int32_t body = parse_choice();
    int32_t lookahead = -1;
    skip_space();
    if (peek() == '(' && peek_after_paren() == '=') {
      ++pos_;
      skip_space();
      ++pos_;  // '='
      lookahead = parse_sequence();
      skip_space();
      if (peek() != ')') fail("expected ')' to close the lookahead assertion");
      ++pos_;
    }
    g_.rules[id].body = body;
    g_.rules[id].lookahead = lookahead;
  }

  char peek_after_paren() const {
    size_t p = pos_ + 1;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return p < text_.size() ? text_[p] : '\0';
  }

  int32_t parse_choice() {
    std::vector<int32_t> alternatives{parse_sequence()};
    skip_space();
    while (peek() == '|') {
      ++pos_;
      skip_space();
      alternatives.push_back(parse_sequence());
      skip_space();
    }
    return g_.choice(std::move(alternatives));
  }

  int32_t parse_sequence() {
    std::vector<int32_t> items;
    while (true) {
      skip_space();
      char c = peek();
      if (at_end() || c == '|' || c == ')' || at_rule_start()) break;
      if (c == '(' && peek_after_paren() == '=') break;
      items.push_back(parse_postfix(parse_primary()));
    }
    return g_.sequence(std::move(items));
  }

  int32_t parse_primary() {
    char c = peek();
    if (c == '"') return parse_string();
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return g_.char_class({}, true);
    }
    if (c == '(') {
      if (++depth_ > kMaxGroupDepth) fail(fmt::format("groups nest deeper than {}", kMaxGroupDepth));
      ++pos_;
      skip_space();
      int32_t inner = parse_choice();
      skip_space();
      if (peek() != ')') fail("expected ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (is_name_char(c)) {
      auto [line, col] = line_col(pos_);
      std::string name(parse_name());
      if (name == "Regex" && peek() == '(') return parse_regex_call();
      reference_position_.try_emplace(name, line, col);
      return g_.ref(g_.rule_id(name));
    }
    fail(fmt::format("unexpected character '{}'", c));
  }

  // xgrammar's Regex("...") (optionally with `, json_string=true`): the regex's language.
  int32_t parse_regex_call() {
    ++pos_;
    skip_space();
    if (peek() != '"') fail("expected a string literal in Regex(...)");
    ++pos_;
    std::string regex;
    while (true) {
      if (at_end() || peek() == '\n') fail("unterminated string literal");
      if (peek() == '"') break;
      append_utf8(regex, parse_char(false));
    }
    ++pos_;
    skip_space();
    if (peek() == ',') {
      while (!at_end() && peek() != ')') ++pos_;
    }
    if (peek() != ')') fail("expected ')' to close Regex(...)");
    ++pos_;
    try {
      return add_regex(g_, regex, "regex");
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  int32_t parse_postfix(int32_t expr) {
    while (true) {
      char c = peek();
      if (c == '*') {
        ++pos_;
        expr = g_.repeat(expr, 0, -1);
      } else if (c == '+') {
        ++pos_;
        expr = g_.repeat(expr, 1, -1);
      } else if (c == '?') {
        ++pos_;
        expr = g_.repeat(expr, 0, 1);
      } else if (c == '{') {
        expr = parse_braces(expr);
      } else {
        return expr;
      }
    }
  }

  int64_t parse_int() {
    skip_space();
    bool negative = peek() == '-';
    if (negative) ++pos_;
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a number in the repetition range");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > 1000000) fail("repetition count too large");
      ++pos_;
    }
    skip_space();
    return negative ? -value : value;
  }

  // {m}, {m,}, {m,n}; xgrammar prints unbounded as {m, -1}.
  int32_t parse_braces(int32_t expr) {
    ++pos_;
    int64_t min = parse_int();
    int64_t max = min;
    if (peek() == ',') {
      ++pos_;
      skip_space();
      max = peek() == '}' ? -1 : parse_int();
    }
    if (peek() != '}') fail("expected '}' to close the repetition range");
    ++pos_;
    if (min < 0 || (max != -1 && max < min)) fail(fmt::format("invalid repetition range {{{},{}}}", min, max));
    return g_.repeat(expr, int32_t(min), int32_t(max));
  }

  // One code point of a literal or class, escapes decoded.
  uint32_t parse_char(bool in_class) {
    if (at_end()) fail(in_class ? "unterminated character class" : "unterminated string literal");
    unsigned char c = peek();
    if (c != '\\') {
      auto [cp, len] = decode_utf8(text_.substr(pos_));
      if (len == 0) fail("invalid UTF-8 in the grammar text");
      pos_ += len;
      return cp;
    }
    ++pos_;
    char e = peek();
    ++pos_;
    switch (e) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'f': return '\f';
      case 'v': return '\v';
      case 'b': return '\b';
      case 'a': return '\a';
      case 'e': return 0x1b;
      case '0': return 0;
      case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': case '.':
      case '(': case ')': case '{': case '}': case '*': case '+': case '?': case '|': case '$':
        return uint32_t(e);
      case 'x': return parse_hex(2);
      case 'u': return parse_hex(4);
      case 'U': return parse_hex(8);
      default: break;
    }
    pos_ -= 2;
    fail(fmt::format("unknown escape '\\{}'", e));
  }

  uint32_t parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      char h = peek();
      int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                              : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) fail(fmt::format("expected {} hex digits in the escape", digits));
      value = value * 16 + uint32_t(d);
      ++pos_;
    }
    if (value > 0x10ffff) fail("code point out of range");
    return value;
  }

  int32_t parse_string() {
    ++pos_;
    std::string bytes;
    while (true) {
      if (at_end() || peek() == '\n') fail("unterminated string literal");
      if (peek() == '"') break;
      append_utf8(bytes, parse_char(false));
    }
    ++pos_;
    return g_.bytes(bytes);
  }

  int32_t parse_class() {
    ++pos_;
    bool negated = peek() == '^';
    if (negated) ++pos_;
    std::vector<CharRange> ranges;
    while (true) {
      if (at_end() || peek() == '\n') fail("unterminated character class");
      if (peek() == ']') break;
      uint32_t lo = parse_char(true);
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']') {
        ++pos_;
        hi = parse_char(true);
        if (hi < lo) fail("character class range is reversed");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return g_.char_class(std::move(ranges), negated);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open at pos_
  Grammar g_;
  std::map<std::string, std::pair<int, int>> reference_position_;
};

}  // namespace

Grammar parse_ebnf(std::string_view text, std::string_view root_rule) {
  return Parser(text).parse(root_rule);
}

}  // namespace brisk::grammar
