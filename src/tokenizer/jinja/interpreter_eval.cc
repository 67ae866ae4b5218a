// Expression evaluation with Python operator semantics (the Interpreter's second half).
#include <cmath>

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/percent_format.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's ordering of two values for < <= > >=; returns <0, 0, >0.
int compare_values(Interpreter& interp, const Value& a, const Value& b, const std::string& op) {
  interp.check_defined(a);
  interp.check_defined(b);
  if (a.is_number() && b.is_number()) {
    double x = a.as_double(), y = b.as_double();
    if (!a.is_float() && !b.is_float()) {
      int64_t i = a.as_int(), j = b.as_int();
      return i < j ? -1 : i > j ? 1 : 0;
    }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return compare_values(interp, x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  interp.fail(fmt::format("'{}' not supported between instances of '{}' and '{}'", op,
                          a.type_name(), b.type_name()));
}

bool contains(Interpreter& interp, const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::kUndefined: return false;  // jinja2 iterates an undefined as empty
    case Value::Type::kString:
      if (!item.is_string())
        interp.fail(fmt::format("'in <string>' requires string as left operand, not {}",
                                item.type_name()));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::kList: case Value::Type::kTuple:
      for (const Value& v : container.as_list())
        if (v.equals(item)) return true;
      return false;
    case Value::Type::kDict: return container.as_dict().find(item) != nullptr;
    default:
      interp.fail(fmt::format("argument of type '{}' is not iterable", container.type_name()));
  }
}

Value repeat(const Value& seq, int64_t times) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i)
    out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace

int Interpreter::compare(const Value& a, const Value& b, const std::string& op) {
  return compare_values(*this, a, b, op);
}

Value Interpreter::eval(const Expr& expr) {
  loc_ = expr.loc;
  switch (expr.kind) {
    case ExprKind::kLiteral: return expr.value;
    case ExprKind::kName: return lookup(expr.name);
    case ExprKind::kList: case ExprKind::kTuple: {
      ValueList items;
      items.reserve(expr.args.size());
      for (const ExprPtr& e : expr.args) items.push_back(eval(*e));
      return expr.kind == ExprKind::kList ? Value::list(std::move(items))
                                          : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      ValueDict dict;
      for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
        Value key = eval(*expr.args[i]);
        dict.set(std::move(key), eval(*expr.args[i + 1]));
      }
      return Value::dict(std::move(dict));
    }
    case ExprKind::kGetAttr: {
      Value target = eval(*expr.args[0]);
      loc_ = expr.loc;
      return get_attr(target, expr.name);
    }
    case ExprKind::kGetItem: {
      Value target = eval(*expr.args[0]);
      Value key = eval(*expr.args[1]);
      loc_ = expr.loc;
      return get_item(target, key);
    }
    case ExprKind::kSlice: return eval_slice(expr);
    case ExprKind::kUnary: {
      Value v = eval(*expr.args[0]);
      loc_ = expr.loc;
      if (expr.name == "not") return Value(!v.truthy());
      check_defined(v);
      if (!v.is_number()) fail(fmt::format("bad operand type for unary {}: '{}'", expr.name, v.type_name()));
      if (expr.name == "+") return v.is_float() ? Value(v.as_double()) : Value(v.as_int());
      return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
    }
    case ExprKind::kBinary: return eval_binary(expr);
    case ExprKind::kCompare: return eval_compare(expr);
    case ExprKind::kCondExpr: {
      if (eval(*expr.args[0]).truthy()) return eval(*expr.args[1]);
      if (expr.args[2]) return eval(*expr.args[2]);
      return Value::undefined("the inline if expression has no else branch");
    }
    case ExprKind::kCall: return eval_call(expr);
    case ExprKind::kFilter: {
      Value target = eval(*expr.args[0]);
      CallArgs args = eval_args(expr, 1);
      loc_ = expr.loc;
      return apply_filter(expr.name, target, args);
    }
    case ExprKind::kTest: {
      Value target = eval(*expr.args[0]);
      CallArgs args = eval_args(expr, 1);
      loc_ = expr.loc;
      return Value(apply_test(expr.name, target, args) != expr.negated);
    }
  }
  fail("unknown expression");
}

CallArgs Interpreter::eval_args(const Expr& expr, size_t first_positional) {
  CallArgs args;
  for (size_t i = first_positional; i < expr.args.size(); ++i)
    args.positional.push_back(eval(*expr.args[i]));
  for (const auto& [key, e] : expr.kwargs) args.keyword.emplace_back(key, eval(*e));
  return args;
}

Value Interpreter::eval_call(const Expr& expr) {
  Value callee = eval(*expr.args[0]);
  CallArgs args = eval_args(expr, 1);
  loc_ = expr.loc;
  return call(callee, args);
}

Value Interpreter::eval_binary(const Expr& expr) {
  const std::string& op = expr.name;
  Value a = eval(*expr.args[0]);
  if (op == "and") return a.truthy() ? eval(*expr.args[1]) : a;
  if (op == "or") return a.truthy() ? a : eval(*expr.args[1]);
  Value b = eval(*expr.args[1]);
  loc_ = expr.loc;
  if (op == "~") return Value(a.to_str() + b.to_str());
  check_defined(a);
  check_defined(b);
  auto unsupported = [&]() {
    fail(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(),
                     b.type_name()));
  };
  // (fail() is [[noreturn]], so control never leaves unsupported().)
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_string())
      fail(fmt::format("can only concatenate str (not \"{}\") to str", b.type_name()));
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      ValueList items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
  }
  if (op == "%" && a.is_string()) return Value(percent_format(*this, a.as_string(), b));
  if (!a.is_number() || !b.is_number()) unsupported();
  bool as_float = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.as_double() == 0) fail("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "**") {
    if (!as_float && b.as_int() >= 0) {
      int64_t result = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; --e) result *= base;
      return Value(result);
    }
    return Value(std::pow(a.as_double(), b.as_double()));
  }
  if (as_float) {
    double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (y == 0) fail(op == "//" ? "float floor division by zero" : "float modulo");
    if (op == "//") return Value(std::floor(x / y));
    if (op == "%") {
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value(r);
    }
  } else {
    int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (y == 0) fail("integer division or modulo by zero");
    if (op == "//") return Value(floor_div(x, y));
    if (op == "%") return Value(floor_mod(x, y));
  }
  fail(fmt::format("unsupported operator '{}'", op));
}

Value Interpreter::eval_compare(const Expr& expr) {
  Value left = eval(*expr.args[0]);
  for (size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = eval(*expr.args[i + 1]);
    loc_ = expr.loc;
    const std::string& op = expr.ops[i];
    bool result;
    if (op == "==") result = left.equals(right);
    else if (op == "!=") result = !left.equals(right);
    else if (op == "in") result = contains(*this, right, left);
    else if (op == "notin") result = !contains(*this, right, left);
    else {
      int c = compare_values(*this, left, right, op);
      result = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!result) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::eval_slice(const Expr& expr) {
  Value target = eval(*expr.args[0]);
  std::optional<int64_t> bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (!expr.args[static_cast<size_t>(i) + 1]) continue;
    Value v = eval(*expr.args[static_cast<size_t>(i) + 1]);
    if (v.is_none()) continue;
    if (!v.is_int() && !v.is_bool()) fail("slice indices must be integers or None");
    bounds[i] = v.as_int();
  }
  loc_ = expr.loc;
  check_defined(target);
  int64_t step = bounds[2].value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  std::u32string chars;
  int64_t length;
  if (target.is_string()) {
    chars = utf8_decode(target.as_string());
    length = static_cast<int64_t>(chars.size());
  } else if (target.is_list()) {
    length = static_cast<int64_t>(target.as_list().size());
  } else {
    fail(fmt::format("'{}' object is not subscriptable", target.type_name()));
  }
  // Python's slice.indices(): clamp, with defaults depending on the step's sign.
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + length : *v;
    if (step > 0) return std::clamp<int64_t>(x, 0, length);
    return std::clamp<int64_t>(x, -1, length - 1);
  };
  int64_t start = clamp(bounds[0], step > 0 ? 0 : length - 1);
  int64_t stop = clamp(bounds[1], step > 0 ? length : -1);
  std::vector<int64_t> indices;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) indices.push_back(i);
  if (target.is_string()) {
    std::u32string out;
    for (int64_t i : indices) out += chars[static_cast<size_t>(i)];
    return Value(utf8_encode(out));
  }
  ValueList out;
  for (int64_t i : indices) out.push_back(target.as_list()[static_cast<size_t>(i)]);
  return target.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value Interpreter::get_attr(const Value& target, const std::string& name) {
  check_defined(target);
  if (target.is_namespace()) {
    if (const Value* v = target.as_namespace().attrs.find(name)) return *v;
  } else if (target.is_dict()) {
    // Python attribute first: `d.items` is the method, not the key "items".
    Value method = find_method(target, name);
    if (!method.is_undefined()) return method;
    if (const Value* v = target.as_dict().find(name)) return *v;
  } else {
    Value method = find_method(target, name);
    if (!method.is_undefined()) return method;
  }
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", target.type_name(), name));
}

Value Interpreter::get_item(const Value& target, const Value& key) {
  check_defined(target);
  if (target.is_dict()) {
    if (const Value* v = target.as_dict().find(key)) return *v;
  } else if ((target.is_list() || target.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (target.is_list()) {
      int64_t n = static_cast<int64_t>(target.as_list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return target.as_list()[static_cast<size_t>(i)];
    } else {
      std::u32string chars = utf8_decode(target.as_string());
      int64_t n = static_cast<int64_t>(chars.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(utf8_encode(chars.substr(static_cast<size_t>(i), 1)));
    }
  }
  // jinja2 falls back to the attribute of the same name (`ns['x']`, `s['upper']`).
  if (key.is_string() && !target.is_dict()) return get_attr(target, key.as_string());
  if (key.is_string() && target.is_dict()) {
    Value method = find_method(target, key.as_string());
    if (!method.is_undefined()) return method;
  }
  return Value::undefined(fmt::format("{} object has no element {}", target.type_name(), key.repr()));
}

}  // namespace brisk::jinja
