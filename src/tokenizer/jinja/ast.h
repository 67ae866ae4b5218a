// The syntax tree of a parsed template: expressions and statements, each with the source
// location that runtime errors report.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/value.h"

namespace brisk::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kLiteral,   // value
  kName,      // name
  kList,      // args = items
  kTuple,     // args = items
  kDict,      // args = key0, value0, key1, value1, ...
  kGetAttr,   // args[0].name
  kGetItem,   // args[0][args[1]]
  kSlice,     // args[0][args[1]:args[2]:args[3]] (absent parts are null)
  kUnary,     // name = "not" | "-" | "+"; args[0]
  kBinary,    // name = operator (+ - * / // % ** ~ and or); args[0], args[1]
  kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ... (ops: == != < <= > >= in notin)
  kCondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
  kCall,      // args[0](args[1:], kwargs)
  kFilter,    // name(args[0], args[1:], kwargs)
  kTest,      // args[0] is [not] name(args[1:], kwargs)
};

struct Expr {
  ExprKind kind;
  SourceLoc loc;
  std::string name;
  Value value;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;  // `is not`
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,        // text
  kOutput,      // {{ expr }}
  kIf,          // branches: (condition or null for else, body)
  kFor,         // targets in expr [if filter] body [else else_body]
  kSet,         // targets = expr, or namespace attribute target_attr of targets[0]
  kSetBlock,    // {% set targets[0] [| filters] %}body{% endset %}; expr applies filters
  kMacro,       // name(params) body
  kCallBlock,   // {% call(params) expr %}body{% endcall %}: body becomes `caller`
  kFilterBlock, // {% filter ... %}body: expr is the filter chain over a placeholder
  kWith,        // {% with targets = values %}body
  kBreak,
  kContinue,
  kGeneration,  // {% generation %}body: Hugging Face's assistant-mask marker, renders body
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: no default
};

struct Stmt {
  StmtKind kind;
  SourceLoc loc;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;  // for: `if` condition
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> targets;
  std::string target_attr;  // set ns.attr
  std::vector<ExprPtr> values;  // with
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  Body else_body;
};

}  // namespace brisk::jinja
