// Statement parsing and token helpers; expressions are in parser_expr.cc.
#include "tokenizer/jinja/parser.h"

#include <cstring>

#include "core/error.h"

namespace brisk::jinja {
namespace {

std::string describe(const Token& token) {
  switch (token.type) {
    case TokenType::kText: return "template text";
    case TokenType::kBlockBegin: return "'{%'";
    case TokenType::kBlockEnd: return "'%}'";
    case TokenType::kVarBegin: return "'{{'";
    case TokenType::kVarEnd: return "'}}'";
    case TokenType::kName: return "'" + token.text + "'";
    case TokenType::kString: return "string literal";
    case TokenType::kInt: case TokenType::kFloat: return "number " + token.text;
    case TokenType::kOperator: return "'" + token.text + "'";
    case TokenType::kEof: return "end of template";
  }
  return "token";
}

// Tags of jinja2 that Hugging Face chat templates do not use and we do not implement.
constexpr const char* kUnsupportedTags[] = {"extends", "block", "include", "import", "from",
                                            "do", "autoescape", "trans", "pluralize"};

}  // namespace

Parser::Parser(std::vector<Token> tokens, std::string name)
    : tokens_(std::move(tokens)), name_(std::move(name)) {}

const Token& Parser::peek(size_t ahead) const {
  size_t i = pos_ + ahead;
  return i < tokens_.size() ? tokens_[i] : tokens_.back();
}
bool Parser::at_op(const char* op) const {
  return current().type == TokenType::kOperator && current().text == op;
}
bool Parser::at_name(const char* name) const {
  return current().type == TokenType::kName && current().text == name;
}
bool Parser::skip_op(const char* op) {
  if (!at_op(op)) return false;
  ++pos_;
  return true;
}
bool Parser::skip_name(const char* name) {
  if (!at_name(name)) return false;
  ++pos_;
  return true;
}
void Parser::expect_op(const char* op) {
  if (!skip_op(op)) fail_unexpected(fmt::format("'{}'", op));
}
std::string Parser::expect_name() {
  if (current().type != TokenType::kName) fail_unexpected("a name");
  return tokens_[pos_++].text;
}
void Parser::expect_block_end() {
  if (current().type != TokenType::kBlockEnd) fail_unexpected("'%}'");
  ++pos_;
}

void Parser::fail(const Token& at, const std::string& message) const {
  throw_error(ErrorCode::kInvalidArgument, "{}:{}:{}: {}", name_, at.loc.line, at.loc.column,
              message);
}
void Parser::fail_unexpected(const std::string& expected) const {
  fail(current(), fmt::format("expected {}, got {}", expected, describe(current())));
}

ExprPtr Parser::make(ExprKind kind, SourceLoc loc) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

Body Parser::parse() {
  Body body;
  parse_body(body, {}, nullptr, {});
  return body;
}

std::string Parser::parse_body(Body& out, std::initializer_list<const char*> end_names,
                               const char* opener, SourceLoc opener_loc) {
  while (true) {
    const Token& token = current();
    switch (token.type) {
      case TokenType::kEof:
        if (opener)
          fail(token, fmt::format("missing '{{% {} %}}' for '{}' opened at line {}",
                                  *(end_names.end() - 1), opener, opener_loc.line));
        return "";
      case TokenType::kText: {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::kText;
        stmt->loc = token.loc;
        stmt->text = token.text;
        out.push_back(std::move(stmt));
        ++pos_;
        break;
      }
      case TokenType::kVarBegin: {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::kOutput;
        stmt->loc = token.loc;
        ++pos_;
        stmt->expr = parse_tuple();
        if (current().type != TokenType::kVarEnd) fail_unexpected("'}}'");
        ++pos_;
        out.push_back(std::move(stmt));
        break;
      }
      case TokenType::kBlockBegin: {
        const Token& tag = peek();
        if (tag.type != TokenType::kName) fail(tag, "expected a tag name after '{%'");
        for (const char* end : end_names) {
          if (tag.text == end) {
            pos_ += 2;
            return tag.text;
          }
        }
        ++pos_;
        out.push_back(parse_statement());
        break;
      }
      default:
        fail(token, fmt::format("unexpected {}", describe(token)));
    }
  }
}

StmtPtr Parser::parse_statement() {
  const Token& tag = current();
  SourceLoc loc = tag.loc;
  std::string name = expect_name();
  if (name == "if") return parse_if(loc);
  if (name == "for") return parse_for(loc);
  if (name == "set") return parse_set(loc);
  if (name == "macro") return parse_macro(loc);
  if (name == "call") return parse_call_block(loc);
  if (name == "filter") return parse_filter_block(loc);
  if (name == "with") return parse_with(loc);
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) fail(tag, fmt::format("'{}' outside of a for loop", name));
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    stmt->loc = loc;
    expect_block_end();
    return stmt;
  }
  if (name == "generation") {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::kGeneration;
    stmt->loc = loc;
    expect_block_end();
    parse_body(stmt->body, {"endgeneration"}, "generation", loc);
    expect_block_end();
    return stmt;
  }
  for (const char* unsupported : kUnsupportedTags)
    if (name == unsupported) fail(tag, fmt::format("unsupported tag '{}'", name));
  if (name.rfind("end", 0) == 0 || name == "else" || name == "elif")
    fail(tag, fmt::format("unexpected '{}' (no open block it could close)", name));
  fail(tag, fmt::format("unknown tag '{}'", name));
}

StmtPtr Parser::parse_if(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kIf;
  stmt->loc = loc;
  ExprPtr condition = parse_tuple(false);
  while (true) {
    expect_block_end();
    Body body;
    std::string end = parse_body(body, {"elif", "else", "endif"}, "if", loc);
    stmt->branches.emplace_back(std::move(condition), std::move(body));
    if (end == "elif") {
      condition = parse_tuple(false);
      continue;
    }
    if (end == "else") {
      expect_block_end();
      Body else_body;
      parse_body(else_body, {"endif"}, "if", loc);
      stmt->branches.emplace_back(nullptr, std::move(else_body));
    }
    expect_block_end();
    return stmt;
  }
}

std::vector<std::string> Parser::parse_targets() {
  std::vector<std::string> targets;
  bool parenthesized = skip_op("(");
  do {
    targets.push_back(expect_name());
  } while (skip_op(","));
  if (parenthesized) expect_op(")");
  return targets;
}

StmtPtr Parser::parse_for(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kFor;
  stmt->loc = loc;
  stmt->targets = parse_targets();
  if (!skip_name("in")) fail_unexpected("'in'");
  stmt->expr = parse_tuple(false);
  if (skip_name("if")) stmt->filter = parse_tuple();
  if (at_name("recursive")) fail(current(), "recursive for loops are not supported");
  expect_block_end();
  ++loop_depth_;
  std::string end = parse_body(stmt->body, {"else", "endfor"}, "for", loc);
  --loop_depth_;
  if (end == "else") {
    expect_block_end();
    parse_body(stmt->else_body, {"endfor"}, "for", loc);
  }
  expect_block_end();
  return stmt;
}

StmtPtr Parser::parse_set(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->loc = loc;
  if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
      peek().text == ".") {
    stmt->kind = StmtKind::kSet;
    stmt->targets.push_back(expect_name());
    expect_op(".");
    stmt->target_attr = expect_name();
    expect_op("=");
    stmt->expr = parse_tuple();
    expect_block_end();
    return stmt;
  }
  stmt->targets = parse_targets();
  if (skip_op("=")) {
    stmt->kind = StmtKind::kSet;
    stmt->expr = parse_tuple();
    expect_block_end();
    return stmt;
  }
  // Block set: `{% set x %}...{% endset %}`, optionally filtered (`{% set x | trim %}`).
  if (stmt->targets.size() != 1) fail(current(), "a block set takes exactly one name");
  stmt->kind = StmtKind::kSetBlock;
  if (at_op("|")) {
    stmt->expr = make(ExprKind::kLiteral, current().loc);
    while (skip_op("|")) stmt->expr = parse_filter(std::move(stmt->expr));
  }
  expect_block_end();
  parse_body(stmt->body, {"endset"}, "set", loc);
  expect_block_end();
  return stmt;
}

std::vector<MacroParam> Parser::parse_params() {
  std::vector<MacroParam> params;
  expect_op("(");
  while (!at_op(")")) {
    if (!params.empty()) expect_op(",");
    if (at_op(")")) break;
    MacroParam param;
    param.name = expect_name();
    if (skip_op("=")) param.default_value = parse_expression();
    params.push_back(std::move(param));
  }
  expect_op(")");
  return params;
}

StmtPtr Parser::parse_macro(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kMacro;
  stmt->loc = loc;
  stmt->name = expect_name();
  stmt->params = parse_params();
  expect_block_end();
  // A macro body is its own function: an enclosing loop's break does not reach into it.
  int saved_depth = loop_depth_;
  loop_depth_ = 0;
  parse_body(stmt->body, {"endmacro"}, "macro", loc);
  loop_depth_ = saved_depth;
  expect_block_end();
  return stmt;
}

StmtPtr Parser::parse_call_block(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kCallBlock;
  stmt->loc = loc;
  if (at_op("(")) stmt->params = parse_params();
  stmt->expr = parse_expression();
  if (stmt->expr->kind != ExprKind::kCall) fail(current(), "'call' expects a macro call");
  expect_block_end();
  int saved_depth = loop_depth_;
  loop_depth_ = 0;
  parse_body(stmt->body, {"endcall"}, "call", loc);
  loop_depth_ = saved_depth;
  expect_block_end();
  return stmt;
}

StmtPtr Parser::parse_filter_block(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kFilterBlock;
  stmt->loc = loc;
  // The body's rendered text is fed through the chain as if it were `placeholder|f1|f2`.
  ExprPtr placeholder = make(ExprKind::kLiteral, current().loc);
  stmt->expr = parse_filter(std::move(placeholder));
  while (skip_op("|")) stmt->expr = parse_filter(std::move(stmt->expr));
  expect_block_end();
  parse_body(stmt->body, {"endfilter"}, "filter", loc);
  expect_block_end();
  return stmt;
}

StmtPtr Parser::parse_with(SourceLoc loc) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kWith;
  stmt->loc = loc;
  while (current().type != TokenType::kBlockEnd) {
    if (!stmt->targets.empty()) expect_op(",");
    stmt->targets.push_back(expect_name());
    expect_op("=");
    stmt->values.push_back(parse_expression());
  }
  expect_block_end();
  parse_body(stmt->body, {"endwith"}, "with", loc);
  expect_block_end();
  return stmt;
}

}  // namespace brisk::jinja
