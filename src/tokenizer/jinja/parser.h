// Recursive-descent parser from lexer tokens to the statement tree, following jinja2's
// grammar and operator precedence (inline if < or < and < not < comparisons < + - < ~ <
// * / // % < ** < unary - + < postfix . [] () < filters and tests).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "tokenizer/jinja/ast.h"

namespace brisk::jinja {

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string name);
  // Throws Error(kInvalidArgument) naming the template, line and column of the first problem.
  Body parse();

 private:
  // Statements.
  // Parses until a block tag whose name is in `end_names` (consumed up to that name) or EOF
  // (allowed only when `end_names` is empty; the last end name is the one an error at EOF
  // asks for). Returns the end name found ("" at EOF).
  std::string parse_body(Body& out, std::initializer_list<const char*> end_names,
                         const char* opener, SourceLoc opener_loc);
  StmtPtr parse_statement();
  StmtPtr parse_if(SourceLoc loc);
  StmtPtr parse_for(SourceLoc loc);
  StmtPtr parse_set(SourceLoc loc);
  StmtPtr parse_macro(SourceLoc loc);
  StmtPtr parse_call_block(SourceLoc loc);
  StmtPtr parse_filter_block(SourceLoc loc);
  StmtPtr parse_with(SourceLoc loc);
  std::vector<MacroParam> parse_params();
  std::vector<std::string> parse_targets();

  // Expressions.
  ExprPtr parse_tuple(bool with_condexpr = true);
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_keyword_chain(const char* keyword, ExprPtr (Parser::*operand)());
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_unary_filtered();
  // One left-associative precedence level: next (op next)*.
  ExprPtr parse_binary(std::initializer_list<const char*> ops, ExprPtr (Parser::*next)());
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
  // Parses `(args)` into node->args (appended) and node->kwargs; current token is '('.
  void parse_call_args(Expr& node);

  // Token helpers.
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const;
  bool at_op(const char* op) const;
  bool at_name(const char* name) const;
  bool skip_op(const char* op);
  bool skip_name(const char* name);
  void expect_op(const char* op);
  std::string expect_name();
  void expect_block_end();
  [[noreturn]] void fail(const Token& at, const std::string& message) const;
  [[noreturn]] void fail_unexpected(const std::string& expected) const;
  static ExprPtr make(ExprKind kind, SourceLoc loc);

  std::vector<Token> tokens_;
  std::string name_;
  size_t pos_ = 0;
  int loop_depth_ = 0;  // break/continue are only valid inside a for body
};

}  // namespace brisk::jinja
