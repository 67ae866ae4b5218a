#include "tokenizer/jinja/template.h"

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"

namespace brisk::jinja {
namespace {

// jinja2 rejects unknown filters and tests when compiling, even in branches never taken.
class NameChecker {
 public:
  explicit NameChecker(const std::string& name) : name_(name) {}

  void check(const Body& body) {
    for (const StmtPtr& stmt : body) check(*stmt);
  }

 private:
  void check(const Stmt& stmt) {
    check(stmt.expr.get());
    check(stmt.filter.get());
    for (const ExprPtr& e : stmt.values) check(e.get());
    for (const MacroParam& p : stmt.params) check(p.default_value.get());
    for (const auto& [condition, body] : stmt.branches) {
      check(condition.get());
      check(body);
    }
    check(stmt.body);
    check(stmt.else_body);
  }

  void check(const Expr* expr) {
    if (!expr) return;
    if (expr->kind == ExprKind::kFilter && !find_filter(expr->name)) fail(*expr, "filter");
    if (expr->kind == ExprKind::kTest && !find_test(expr->name)) fail(*expr, "test");
    for (const ExprPtr& e : expr->args) check(e.get());
    for (const auto& [_, e] : expr->kwargs) check(e.get());
  }

  [[noreturn]] void fail(const Expr& expr, const char* what) {
    throw_error(ErrorCode::kInvalidArgument, "{}:{}:{}: no {} named '{}'", name_, expr.loc.line,
                expr.loc.column, what, expr.name);
  }

  const std::string& name_;
};

}  // namespace

Template Template::parse(std::string source, std::string name) {
  std::vector<Token> tokens = Lexer(std::move(source), name).tokenize();
  auto body = std::make_shared<Body>(Parser(std::move(tokens), name).parse());
  NameChecker(name).check(*body);
  return Template(std::move(name), std::move(body));
}

std::string Template::render(const ValueDict& globals) const {
  Interpreter interp(name_, globals);
  return interp.render(*body_);
}

}  // namespace brisk::jinja
