// Tree-walking evaluator for a parsed template. One Interpreter renders one template once;
// it is cheap to create, so a Template builds a fresh one per render (render is const and
// thread-safe on the Template).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace brisk::jinja {

// Variables of one scope. jinja2 scopes: the template top level, each for-loop iteration,
// each macro call and each with block; `if` shares its enclosing scope.
struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};

class Interpreter {
 public:
  // `globals` are the render context plus builtins (raise_exception, ...); `name` prefixes
  // runtime errors.
  Interpreter(const std::string& name, const ValueDict& globals);
  // Breaks the reference cycles a render can create (a macro's closure frame holds the
  // macro itself; a namespace may hold itself), so nothing outlives the render.
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render(const Body& body);

  // Throws Error(kInvalidArgument) "name:line:column: message" at the node being evaluated.
  [[noreturn]] void fail(const std::string& message) const;
  // Calls a builtin or macro with already evaluated arguments.
  Value call(const Value& callee, CallArgs& args);
  // Applies a filter/test by name (used by map/select/... filters).
  Value apply_filter(const std::string& name, const Value& target, CallArgs& args);
  bool apply_test(const std::string& name, const Value& target, CallArgs& args);
  // Python-like attribute and item access with jinja2's fallbacks (attr -> item and back).
  Value get_attr(const Value& target, const std::string& name);
  Value get_item(const Value& target, const Value& key);
  // Items iterated by `for` (dict -> keys, string -> characters, undefined -> nothing).
  ValueList iterate(const Value& iterable);
  // Python ordering for < <= > >= and sorting: <0, 0, >0; fails on unorderable types.
  int compare(const Value& a, const Value& b, const std::string& op = "<");
  // Remembers a namespace created during this render so ~Interpreter can clear it.
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }
  // Fails with jinja2's UndefinedError text when `v` is undefined.
  void check_defined(const Value& v) const;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec(const Body& body, std::string& out);
  Flow exec_stmt(const Stmt& stmt, std::string& out);
  Flow exec_for(const Stmt& stmt, std::string& out);
  void exec_set(const Stmt& stmt);
  // Runs `{% filter %}`/`{% set x | f %}` chains over the rendered body text.
  Value apply_filter_chain(const Expr& chain, const Value& input);
  // A callable that renders `body` with `params` bound; it refers to the AST, which the
  // Template keeps alive for the whole render.
  Value make_macro(const Body& body, const std::vector<MacroParam>& params,
                   const std::string& name);

  Value eval(const Expr& expr);
  Value eval_binary(const Expr& expr);
  Value eval_compare(const Expr& expr);
  Value eval_slice(const Expr& expr);
  Value eval_call(const Expr& expr);
  CallArgs eval_args(const Expr& expr, size_t first_positional);

  Value lookup(const std::string& name) const;
  void assign(const std::vector<std::string>& targets, const Value& value);
  std::shared_ptr<Frame> push_frame();

  std::string name_;
  const ValueDict& globals_;
  std::shared_ptr<Frame> frame_;
  SourceLoc loc_;
  int call_depth_ = 0;
  std::vector<std::shared_ptr<Frame>> closures_;  // frames captured by macros
  std::vector<Value> namespaces_;
};

}  // namespace brisk::jinja
