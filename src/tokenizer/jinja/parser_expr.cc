// Expression parsing (the Parser class is split in two files to keep each readable).
#include <cstdlib>

#include "core/error.h"
#include "tokenizer/jinja/parser.h"

namespace brisk::jinja {

ExprPtr Parser::parse_tuple(bool with_condexpr) {
  SourceLoc loc = current().loc;
  ExprPtr first = parse_expression(with_condexpr);
  if (!at_op(",")) return first;
  auto tuple = make(ExprKind::kTuple, loc);
  tuple->args.push_back(std::move(first));
  while (skip_op(",")) {
    // A trailing comma ends the tuple (`{% set t = 1, %}`).
    if (current().type == TokenType::kBlockEnd || current().type == TokenType::kVarEnd ||
        at_op(")"))
      break;
    tuple->args.push_back(parse_expression(with_condexpr));
  }
  return tuple;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  ExprPtr node = parse_or();
  if (!with_condexpr) return node;
  while (at_name("if")) {
    SourceLoc loc = current().loc;
    ++pos_;
    auto cond = make(ExprKind::kCondExpr, loc);
    cond->args.push_back(parse_or());
    cond->args.push_back(std::move(node));
    cond->args.push_back(skip_name("else") ? parse_expression() : nullptr);
    node = std::move(cond);
  }
  return node;
}

// A left-associative chain `operand (keyword operand)*` of the boolean keyword operators.
ExprPtr Parser::parse_keyword_chain(const char* keyword, ExprPtr (Parser::*operand)()) {
  ExprPtr node = (this->*operand)();
  while (at_name(keyword)) {
    auto bin = make(ExprKind::kBinary, current().loc);
    ++pos_;
    bin->name = keyword;
    bin->args.push_back(std::move(node));
    bin->args.push_back((this->*operand)());
    node = std::move(bin);
  }
  return node;
}

ExprPtr Parser::parse_or() { return parse_keyword_chain("or", &Parser::parse_and); }

ExprPtr Parser::parse_and() { return parse_keyword_chain("and", &Parser::parse_not); }

ExprPtr Parser::parse_not() {
  if (at_name("not")) {
    auto unary = make(ExprKind::kUnary, current().loc);
    ++pos_;
    unary->name = "not";
    unary->args.push_back(parse_not());
    return unary;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  SourceLoc loc = current().loc;
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (current().type == TokenType::kOperator &&
        (current().text == "==" || current().text == "!=" || current().text == "<" ||
         current().text == "<=" || current().text == ">" || current().text == ">=")) {
      op = current().text;
      ++pos_;
    } else if (at_name("in")) {
      op = "in";
      ++pos_;
    } else if (at_name("not") && peek().type == TokenType::kName && peek().text == "in") {
      op = "notin";
      pos_ += 2;
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::kCompare, loc);
      cmp->args.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_binary(std::initializer_list<const char*> ops, ExprPtr (Parser::*next)()) {
  ExprPtr node = (this->*next)();
  while (true) {
    const Token& token = current();
    const char* matched = nullptr;
    if (token.type == TokenType::kOperator)
      for (const char* op : ops)
        if (token.text == op) matched = op;
    if (!matched) return node;
    auto bin = make(ExprKind::kBinary, token.loc);
    bin->name = matched;
    ++pos_;
    bin->args.push_back(std::move(node));
    bin->args.push_back((this->*next)());
    node = std::move(bin);
  }
}

ExprPtr Parser::parse_math1() { return parse_binary({"+", "-"}, &Parser::parse_concat); }
ExprPtr Parser::parse_concat() { return parse_binary({"~"}, &Parser::parse_math2); }
ExprPtr Parser::parse_math2() {
  return parse_binary({"*", "/", "//", "%"}, &Parser::parse_pow);
}
ExprPtr Parser::parse_pow() { return parse_binary({"**"}, &Parser::parse_unary_filtered); }
ExprPtr Parser::parse_unary_filtered() { return parse_unary(true); }

ExprPtr Parser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (at_op("-") || at_op("+")) {
    node = make(ExprKind::kUnary, current().loc);
    node->name = current().text;
    ++pos_;
    node->args.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& token = current();
  SourceLoc loc = token.loc;
  switch (token.type) {
    case TokenType::kName: {
      const std::string& n = token.text;
      ExprPtr node = make(ExprKind::kLiteral, loc);
      if (n == "true" || n == "True") node->value = Value(true);
      else if (n == "false" || n == "False") node->value = Value(false);
      else if (n == "none" || n == "None") node->value = Value::none();
      else {
        node->kind = ExprKind::kName;
        node->name = n;
      }
      ++pos_;
      return node;
    }
    case TokenType::kString: {
      // Adjacent string literals concatenate, as in Python.
      std::string text;
      while (current().type == TokenType::kString) text += tokens_[pos_++].text;
      ExprPtr node = make(ExprKind::kLiteral, loc);
      node->value = Value(std::move(text));
      return node;
    }
    case TokenType::kInt: {
      ExprPtr node = make(ExprKind::kLiteral, loc);
      errno = 0;
      long long v = std::strtoll(token.text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(token, "integer literal out of 64-bit range");
      node->value = Value(static_cast<int64_t>(v));
      ++pos_;
      return node;
    }
    case TokenType::kFloat: {
      ExprPtr node = make(ExprKind::kLiteral, loc);
      node->value = Value(std::strtod(token.text.c_str(), nullptr));
      ++pos_;
      return node;
    }
    case TokenType::kOperator:
      if (token.text == "(") {
        ++pos_;
        if (skip_op(")")) return make(ExprKind::kTuple, loc);
        ExprPtr inner = parse_expression();
        if (at_op(",")) {
          auto tuple = make(ExprKind::kTuple, loc);
          tuple->args.push_back(std::move(inner));
          while (skip_op(",")) {
            if (at_op(")")) break;
            tuple->args.push_back(parse_expression());
          }
          inner = std::move(tuple);
        }
        expect_op(")");
        return inner;
      }
      if (token.text == "[") {
        ++pos_;
        auto list = make(ExprKind::kList, loc);
        while (!at_op("]")) {
          if (!list->args.empty()) expect_op(",");
          if (at_op("]")) break;
          list->args.push_back(parse_expression());
        }
        expect_op("]");
        return list;
      }
      if (token.text == "{") {
        ++pos_;
        auto dict = make(ExprKind::kDict, loc);
        while (!at_op("}")) {
          if (!dict->args.empty()) expect_op(",");
          if (at_op("}")) break;
          dict->args.push_back(parse_expression());
          expect_op(":");
          dict->args.push_back(parse_expression());
        }
        expect_op("}");
        return dict;
      }
      break;
    default:
      break;
  }
  fail_unexpected("an expression");
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".") || at_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_op("(")) {
      auto call = make(ExprKind::kCall, current().loc);
      call->args.push_back(std::move(node));
      parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (skip_op("|")) {
      node = parse_filter(std::move(node));
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_op("(")) {
      auto call = make(ExprKind::kCall, current().loc);
      call->args.push_back(std::move(node));
      parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  SourceLoc loc = current().loc;
  if (skip_op(".")) {
    if (current().type == TokenType::kInt) {
      auto item = make(ExprKind::kGetItem, loc);
      item->args.push_back(std::move(node));
      auto index = make(ExprKind::kLiteral, current().loc);
      index->value = Value(static_cast<int64_t>(std::strtoll(current().text.c_str(), nullptr, 10)));
      ++pos_;
      item->args.push_back(std::move(index));
      return item;
    }
    auto attr = make(ExprKind::kGetAttr, loc);
    attr->name = expect_name();
    attr->args.push_back(std::move(node));
    return attr;
  }
  expect_op("[");
  // Slices: [a], [a:b], [a:b:c], [:b], [::-1]
  ExprPtr parts[3];
  int num_colons = 0;
  if (!at_op(":")) parts[0] = parse_tuple();
  while (num_colons < 2 && skip_op(":")) {
    ++num_colons;
    if (!at_op(":") && !at_op("]")) parts[num_colons] = parse_expression();
  }
  expect_op("]");
  if (num_colons == 0) {
    auto item = make(ExprKind::kGetItem, loc);
    item->args.push_back(std::move(node));
    item->args.push_back(std::move(parts[0]));
    return item;
  }
  auto slice = make(ExprKind::kSlice, loc);
  slice->args.push_back(std::move(node));
  for (auto& part : parts) slice->args.push_back(std::move(part));
  return slice;
}

ExprPtr Parser::parse_filter(ExprPtr node) {
  auto filter = make(ExprKind::kFilter, current().loc);
  filter->name = expect_name();
  filter->args.push_back(std::move(node));
  if (at_op("(")) parse_call_args(*filter);
  return filter;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  auto test = make(ExprKind::kTest, current().loc);
  ++pos_;  // 'is'
  test->negated = skip_name("not");
  test->name = expect_name();
  test->args.push_back(std::move(node));
  if (at_op("(")) {
    parse_call_args(*test);
  } else {
    // jinja2 allows one argument without parentheses: `x is divisibleby 3`.
    const Token& t = current();
    bool starts_arg = t.type == TokenType::kString || t.type == TokenType::kInt ||
                      t.type == TokenType::kFloat ||
                      (t.type == TokenType::kName && t.text != "else" && t.text != "or" &&
                       t.text != "and") ||
                      (t.type == TokenType::kOperator && (t.text == "[" || t.text == "{"));
    if (starts_arg) {
      if (at_name("is")) fail(t, "tests cannot be chained with 'is'");
      test->args.push_back(parse_postfix(parse_primary()));
    }
  }
  return test;
}

void Parser::parse_call_args(Expr& node) {
  expect_op("(");
  bool first = true;
  while (!at_op(")")) {
    if (!first) expect_op(",");
    first = false;
    if (at_op(")")) break;
    if (at_op("*") || at_op("**")) fail(current(), "*args and **kwargs in calls are not supported");
    if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
        peek().text == "=") {
      std::string key = expect_name();
      ++pos_;
      node.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!node.kwargs.empty()) fail(current(), "positional argument follows keyword argument");
      node.args.push_back(parse_expression());
    }
  }
  expect_op(")");
}

}  // namespace brisk::jinja
