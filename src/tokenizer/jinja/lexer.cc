#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length in bytes of the whitespace run (Python str.isspace) starting at `pos`.
size_t space_run(const std::string& s, size_t pos) {
  size_t end = pos;
  while (end < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[end]);
    if (c < 0x80) {
      if (!py_is_space(c)) break;
      ++end;
      continue;
    }
    size_t len = (c >= 0xF0) ? 4 : (c >= 0xE0) ? 3 : 2;
    std::u32string cp = utf8_decode(std::string_view(s).substr(end, len));
    if (cp.size() != 1 || !py_is_space(cp[0])) break;
    end += len;
  }
  return end - pos;
}

// jinja2 joins source.splitlines() with "\n": CRLF/CR become LF and one trailing newline goes.
std::string normalize_newlines(std::string source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

constexpr const char* kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/",
                                      "%",  "~",  "<",  ">",  "=",  "(", ")", "[", "]", "{",
                                      "}",  ".",  ",",  ":",  "|",  ";"};

}  // namespace

Lexer::Lexer(std::string source, std::string name)
    : source_(normalize_newlines(std::move(source))), name_(std::move(name)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source_.size(); ++i)
    if (source_[i] == '\n') line_starts_.push_back(i + 1);
}

SourceLoc Lexer::loc_at(size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line = static_cast<size_t>(it - line_starts_.begin());
  return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
}

void Lexer::fail(size_t offset, const std::string& message) const {
  SourceLoc loc = loc_at(offset);
  throw_error(ErrorCode::kInvalidArgument, "{}:{}:{}: {}", name_, loc.line, loc.column, message);
}

void Lexer::push(TokenType type, std::string text, size_t offset) {
  tokens_.push_back(Token{type, std::move(text), loc_at(offset)});
}

void Lexer::push_text(std::string text, size_t offset, char sign, bool lstrip_applies) {
  if (sign == '-') {
    text = py_strip(text, std::nullopt, false, true);
  } else if (sign != '+' && lstrip_applies) {
    size_t line_pos = text.rfind('\n');
    line_pos = line_pos == std::string::npos ? 0 : line_pos + 1;
    if ((line_pos > 0 || line_starting_) && line_pos < text.size() &&
        space_run(text, line_pos) == text.size() - line_pos)
      text.resize(line_pos);
  }
  if (!text.empty()) push(TokenType::kText, std::move(text), offset);
}

void Lexer::after_tag_end(char sign, bool trim_newline) {
  size_t start = pos_;
  if (sign == '-') {
    pos_ += space_run(source_, pos_);
  } else if (sign != '+' && trim_newline && pos_ < source_.size() && source_[pos_] == '\n') {
    ++pos_;
  }
  // The closing tag itself never ends with '\n', so only consumed whitespace matters.
  line_starting_ = pos_ > start && source_[pos_ - 1] == '\n';
}

std::vector<Token> Lexer::tokenize() {
  while (pos_ < source_.size()) {
    size_t tag = pos_;
    while (true) {
      tag = source_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= source_.size()) {
        tag = std::string::npos;
        break;
      }
      char next = source_[tag + 1];
      if (next == '{' || next == '%' || next == '#') break;
      ++tag;
    }
    if (tag == std::string::npos) {
      push_text(source_.substr(pos_), pos_, 0, false);
      break;
    }
    char kind = source_[tag + 1];
    char sign = tag + 2 < source_.size() ? source_[tag + 2] : 0;
    if (sign != '-' && sign != '+') sign = 0;
    push_text(source_.substr(pos_, tag - pos_), pos_, sign, kind != '{');
    pos_ = tag + 2 + (sign ? 1 : 0);
    if (kind == '#') {
      size_t end = source_.find("#}", pos_);
      if (end == std::string::npos) fail(tag, "unterminated comment (missing '#}')");
      char end_sign = end > pos_ && (source_[end - 1] == '-' || source_[end - 1] == '+')
                          ? source_[end - 1]
                          : 0;
      pos_ = end + 2;
      after_tag_end(end_sign, true);
    } else if (kind == '%') {
      if (!try_lex_raw(tag)) lex_tag(true, tag);
    } else {
      lex_tag(false, tag);
    }
  }
  push(TokenType::kEof, "", source_.size());
  return std::move(tokens_);
}

bool Lexer::try_lex_raw(size_t offset) {
  size_t p = pos_ + space_run(source_, pos_);
  if (source_.compare(p, 3, "raw") != 0 || (p + 3 < source_.size() && is_name_char(source_[p + 3])))
    return false;
  p += 3;
  p += space_run(source_, p);
  char open_sign = 0;
  if (p < source_.size() && (source_[p] == '-' || source_[p] == '+')) open_sign = source_[p++];
  if (source_.compare(p, 2, "%}") != 0) fail(offset, "expected '%}' after 'raw'");
  p += 2;
  // `raw -%}` strips the whitespace that starts the raw text; plain `%}` keeps its newline
  // (jinja2 applies trim_blocks only after `endraw`).
  if (open_sign == '-') p += space_run(source_, p);
  line_starting_ = source_[p - 1] == '\n';
  size_t search = p;
  while (true) {
    size_t end_tag = source_.find("{%", search);
    if (end_tag == std::string::npos) fail(offset, "unterminated raw block (missing endraw)");
    size_t q = end_tag + 2;
    char end_sign = 0;
    if (q < source_.size() && (source_[q] == '-' || source_[q] == '+')) end_sign = source_[q++];
    q += space_run(source_, q);
    if (source_.compare(q, 6, "endraw") != 0) {
      search = end_tag + 2;
      continue;
    }
    q += 6;
    q += space_run(source_, q);
    char close_sign = 0;
    if (q < source_.size() && (source_[q] == '-' || source_[q] == '+')) close_sign = source_[q++];
    if (source_.compare(q, 2, "%}") != 0) fail(end_tag, "expected '%}' after 'endraw'");
    push_text(source_.substr(p, end_tag - p), p, end_sign, true);
    pos_ = q + 2;
    after_tag_end(close_sign, true);
    return true;
  }
}

void Lexer::lex_tag(bool is_block, size_t tag_offset) {
  push(is_block ? TokenType::kBlockBegin : TokenType::kVarBegin, "", tag_offset);
  const char* close = is_block ? "%}" : "}}";
  int depth = 0;  // brackets open inside the tag: `}}` closes a dict literal there
  while (true) {
    pos_ += space_run(source_, pos_);
    if (pos_ >= source_.size())
      fail(tag_offset, fmt::format("unterminated {} (missing '{}'{})",
                                   is_block ? "block tag" : "expression", close,
                                   depth > 0 ? " or a closing bracket" : ""));
    char c = source_[pos_];
    if (depth == 0) {
      char end_sign = 0;
      size_t p = pos_;
      if ((c == '-' || (c == '+' && is_block)) && source_.compare(p + 1, 2, close) == 0) {
        end_sign = c;
        ++p;
      }
      if (source_.compare(p, 2, close) == 0) {
        push(is_block ? TokenType::kBlockEnd : TokenType::kVarEnd, "", pos_);
        pos_ = p + 2;
        after_tag_end(end_sign, is_block);
        return;
      }
    }
    if (c == '\'' || c == '"') {
      lex_string(c);
    } else if (is_digit(c)) {
      lex_number();
    } else if (is_name_start(c)) {
      size_t start = pos_;
      while (pos_ < source_.size() && is_name_char(source_[pos_])) ++pos_;
      push(TokenType::kName, source_.substr(start, pos_ - start), start);
    } else {
      const char* op = nullptr;
      for (const char* candidate : kOperators) {
        if (source_.compare(pos_, std::strlen(candidate), candidate) == 0) {
          op = candidate;
          break;
        }
      }
      if (!op) fail(pos_, fmt::format("unexpected character '{}'", c));
      if (*op == '(' || *op == '[' || *op == '{') ++depth;
      if ((*op == ')' || *op == ']' || *op == '}') && depth > 0) --depth;
      push(TokenType::kOperator, op, pos_);
      pos_ += std::strlen(op);
    }
  }
}

void Lexer::lex_string(char quote) {
  size_t start = pos_++;
  std::string out;
  while (true) {
    if (pos_ >= source_.size()) fail(start, "unterminated string literal");
    char c = source_[pos_++];
    if (c == quote) break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= source_.size()) fail(start, "unterminated string literal");
    char e = source_[pos_++];
    auto hex = [&](int digits) {
      if (pos_ + static_cast<size_t>(digits) > source_.size()) fail(pos_, "truncated \\x/\\u escape");
      std::string h = source_.substr(pos_, static_cast<size_t>(digits));
      if (h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        fail(pos_, "invalid hex digits in string escape");
      pos_ += static_cast<size_t>(digits);
      utf8_append(out, static_cast<char32_t>(std::stoul(h, nullptr, 16)));
    };
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;  // line continuation
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (e >= '0' && e <= '7') {
          int value = e - '0';
          for (int i = 0; i < 2 && pos_ < source_.size() && source_[pos_] >= '0' && source_[pos_] <= '7'; ++i)
            value = value * 8 + (source_[pos_++] - '0');
          utf8_append(out, static_cast<char32_t>(value));
        } else {
          // Python keeps unknown escapes verbatim.
          out += '\\';
          out += e;
        }
    }
  }
  push(TokenType::kString, std::move(out), start);
}

void Lexer::lex_number() {
  size_t start = pos_;
  auto digits = [&] {
    while (pos_ < source_.size() && (is_digit(source_[pos_]) || source_[pos_] == '_')) ++pos_;
  };
  digits();
  bool is_float = false;
  // After '.', digits are an item index (`x.0.1` is x[0][1]), never a float.
  bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::kOperator &&
                   tokens_.back().text == ".";
  if (after_dot) {
    push(TokenType::kInt, source_.substr(start, pos_ - start), start);
    return;
  }
  if (pos_ + 1 < source_.size() && source_[pos_] == '.' && is_digit(source_[pos_ + 1])) {
    is_float = true;
    ++pos_;
    digits();
  }
  if (pos_ < source_.size() && (source_[pos_] == 'e' || source_[pos_] == 'E')) {
    size_t p = pos_ + 1;
    if (p < source_.size() && (source_[p] == '+' || source_[p] == '-')) ++p;
    if (p < source_.size() && is_digit(source_[p])) {
      is_float = true;
      pos_ = p;
      digits();
    }
  }
  std::string text = source_.substr(start, pos_ - start);
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  push(is_float ? TokenType::kFloat : TokenType::kInt, std::move(text), start);
}

}  // namespace brisk::jinja
