// Splits Jinja2 template source into tokens, applying whitespace control the way jinja2 does
// with Hugging Face's settings (trim_blocks and lstrip_blocks on, keep_trailing_newline off):
// `{%-`/`-%}` strip all adjacent whitespace, `{%+`/`+%}` disable lstrip/trim, lstrip_blocks
// removes spaces/tabs before a block or comment tag that starts a line, trim_blocks removes
// the first newline after a block or comment tag. Comments vanish; raw blocks become text.
#pragma once

#include <string>
#include <vector>

namespace brisk::jinja {

struct SourceLoc {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

enum class TokenType {
  kText,        // literal template text (whitespace control already applied)
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kVarBegin,    // {{
  kVarEnd,      // }}
  kName,        // identifiers and keywords (if, for, and, true, ...)
  kString,      // string literal, escapes already decoded
  kInt,
  kFloat,
  kOperator,    // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } . , : |
  kEof,
};

struct Token {
  TokenType type;
  std::string text;  // decoded content for kText/kString/kName/kOperator/kInt/kFloat
  SourceLoc loc;
};

class Lexer {
 public:
  // `name` appears in error messages ("chat_template:3:7: unterminated string").
  Lexer(std::string source, std::string name);
  std::vector<Token> tokenize();

 private:
  [[noreturn]] void fail(size_t offset, const std::string& message) const;
  SourceLoc loc_at(size_t offset) const;
  void push(TokenType type, std::string text, size_t offset);
  // Lexes the inside of {{ }} or {% %} starting at pos_; consumes the closing tag.
  void lex_tag(bool is_block, size_t tag_offset);
  // Handles {% raw %}...{% endraw %} when the block at `offset` is one (pos_ is just past
  // `{%` and its sign); returns false if it is another tag.
  bool try_lex_raw(size_t offset);
  void lex_string(char quote);
  void lex_number();
  // Applies trim_blocks (or `-` stripping) after a closing tag that ended at pos_.
  void after_tag_end(char sign, bool trim_newline);
  // Emits text with `{%-` / lstrip_blocks applied according to the following tag.
  void push_text(std::string text, size_t offset, char sign, bool lstrip_applies);

  std::string source_;
  std::string name_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  // Whether the last consumed tag ended with a newline (jinja2 lets lstrip_blocks strip the
  // indentation of the next tag then, even though the text before it holds no newline).
  bool line_starting_ = true;
};

}  // namespace brisk::jinja
