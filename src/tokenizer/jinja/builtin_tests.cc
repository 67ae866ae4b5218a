// jinja2's builtin tests, global functions (range, namespace, dict) and argument binding.
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {

ArgBinder::ArgBinder(Interpreter& interp, CallArgs& args, const char* function,
                     std::initializer_list<const char*> params)
    : interp_(interp), function_(function), params_(params), values_(params.size()),
      given_(params.size(), false) {
  if (args.positional.size() > params_.size())
    interp.fail(fmt::format("{}() takes {} argument(s) but {} were given", function,
                            params_.size(), args.positional.size()));
  for (size_t i = 0; i < args.positional.size(); ++i) {
    values_[i] = args.positional[i];
    given_[i] = true;
  }
  for (auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < params_.size() && key != params_[i]) ++i;
    if (i == params_.size())
      interp.fail(fmt::format("{}() got an unexpected keyword argument '{}'", function, key));
    values_[i] = value;
    given_[i] = true;
  }
}

int64_t ArgBinder::get_int(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const Value& v = values_[i];
  if (v.is_int() || v.is_bool()) return v.as_int();
  interp_.fail(fmt::format("{}(): argument '{}' must be an integer, got {}", function_,
                           params_[i], v.type_name()));
}

bool ArgBinder::get_bool(size_t i, bool fallback) const {
  return has(i) ? values_[i].truthy() : fallback;
}

std::string ArgBinder::get_string(size_t i, const std::string& fallback) const {
  if (!has(i)) return fallback;
  const Value& v = values_[i];
  if (v.is_string()) return v.as_string();
  interp_.fail(fmt::format("{}(): argument '{}' must be a string, got {}", function_,
                           params_[i], v.type_name()));
}

std::optional<std::string> ArgBinder::get_optional_string(size_t i) const {
  if (!has(i) || values_[i].is_none()) return std::nullopt;
  return get_string(i, "");
}

namespace {

const Value& arg0(Interpreter& interp, CallArgs& args, const char* test) {
  if (args.positional.empty()) interp.fail(fmt::format("test '{}' needs an argument", test));
  return args.positional[0];
}

bool test_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool test_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool test_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool test_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool test_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool test_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool test_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool test_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool test_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool test_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool test_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool test_callable(Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }
// Python's iter() succeeds on str, list, tuple, dict and jinja2's Undefined.
bool test_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
// jinja2's sequence test: len() and __getitem__ exist (Undefined has both).
bool test_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool test_escaped(Interpreter&, const Value&, CallArgs&) { return false; }
bool test_lower(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && py_lower(v.as_string()) == v.as_string();
}
bool test_upper(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && py_upper(v.as_string()) == v.as_string();
}

int64_t need_int(Interpreter& interp, const Value& v, const char* test) {
  interp.check_defined(v);
  if (!v.is_int() && !v.is_bool())
    interp.fail(fmt::format("test '{}' expects an integer, got {}", test, v.type_name()));
  return v.as_int();
}
bool test_even(Interpreter& i, const Value& v, CallArgs&) { return need_int(i, v, "even") % 2 == 0; }
bool test_odd(Interpreter& i, const Value& v, CallArgs&) { return need_int(i, v, "odd") % 2 != 0; }
bool test_divisibleby(Interpreter& i, const Value& v, CallArgs& a) {
  int64_t d = need_int(i, arg0(i, a, "divisibleby"), "divisibleby");
  if (d == 0) i.fail("divisibleby: division by zero");
  return need_int(i, v, "divisibleby") % d == 0;
}

bool test_eq(Interpreter& i, const Value& v, CallArgs& a) { return v.equals(arg0(i, a, "eq")); }
bool test_ne(Interpreter& i, const Value& v, CallArgs& a) { return !v.equals(arg0(i, a, "ne")); }
bool test_lt(Interpreter& i, const Value& v, CallArgs& a) { return i.compare(v, arg0(i, a, "lt"), "<") < 0; }
bool test_le(Interpreter& i, const Value& v, CallArgs& a) { return i.compare(v, arg0(i, a, "le"), "<=") <= 0; }
bool test_gt(Interpreter& i, const Value& v, CallArgs& a) { return i.compare(v, arg0(i, a, "gt"), ">") > 0; }
bool test_ge(Interpreter& i, const Value& v, CallArgs& a) { return i.compare(v, arg0(i, a, "ge"), ">=") >= 0; }
bool test_sameas(Interpreter& i, const Value& v, CallArgs& a) {
  const Value& other = arg0(i, a, "sameas");
  // Identity is only observable for singletons and shared containers; equality of
  // none/bool/undefined matches Python's `is` for them.
  if (v.is_none() || v.is_bool() || v.is_undefined()) return v.type() == other.type() && v.equals(other);
  return false;
}
bool test_in(Interpreter& i, const Value& v, CallArgs& a) {
  const Value& seq = arg0(i, a, "in");
  if (seq.is_string()) return v.is_string() && seq.as_string().find(v.as_string()) != std::string::npos;
  if (seq.is_dict()) return seq.as_dict().find(v) != nullptr;
  for (const Value& item : i.iterate(seq))
    if (item.equals(v)) return true;
  return false;
}
bool test_filter(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool test_test(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> table = {
      {"boolean", test_boolean}, {"callable", test_callable}, {"defined", test_defined},
      {"divisibleby", test_divisibleby}, {"eq", test_eq}, {"equalto", test_eq},
      {"==", test_eq}, {"escaped", test_escaped}, {"even", test_even}, {"false", test_false},
      {"filter", test_filter}, {"float", test_float}, {"ge", test_ge}, {">=", test_ge},
      {"gt", test_gt}, {">", test_gt}, {"greaterthan", test_gt}, {"in", test_in},
      {"integer", test_integer}, {"iterable", test_iterable}, {"le", test_le},
      {"<=", test_le}, {"lower", test_lower}, {"lt", test_lt}, {"<", test_lt},
      {"lessthan", test_lt}, {"mapping", test_mapping}, {"ne", test_ne}, {"!=", test_ne},
      {"none", test_none}, {"number", test_number}, {"odd", test_odd}, {"sameas", test_sameas},
      {"sequence", test_sequence}, {"string", test_string}, {"test", test_test},
      {"true", test_true}, {"undefined", test_undefined}, {"upper", test_upper},
  };
  return table;
}

Value global_range(CallArgs& args, Interpreter& interp) {
  if (!args.keyword.empty()) interp.fail("range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool())
      interp.fail(fmt::format("range() arguments must be integers, got {}", v.type_name()));
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3) interp.fail("range() expects 1 to 3 arguments");
  int64_t start = n.size() == 1 ? 0 : n[0];
  int64_t stop = n.size() == 1 ? n[0] : n[1];
  int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) interp.fail("range() arg 3 must not be zero");
  // The sandbox caps ranges as jinja2's does, so a template cannot exhaust memory.
  constexpr int64_t kMaxRange = 100000;
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange)
      interp.fail(fmt::format("range() too big (more than {} items)", kMaxRange));
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

ValueDict kwargs_dict(CallArgs& args, Interpreter& interp, const char* function) {
  ValueDict dict;
  if (args.positional.size() > 1)
    interp.fail(fmt::format("{}() takes at most one positional argument", function));
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict()) dict = init.as_dict();
    else if (init.is_namespace()) dict = init.as_namespace().attrs;
    else interp.fail(fmt::format("{}() expects a mapping, got {}", function, init.type_name()));
  }
  for (auto& [key, value] : args.keyword) dict.set(Value(key), value);
  return dict;
}

Value global_namespace(CallArgs& args, Interpreter& interp) {
  Value ns = Value::make_namespace(kwargs_dict(args, interp, "namespace"));
  interp.track_namespace(ns);
  return ns;
}

Value global_dict(CallArgs& args, Interpreter& interp) {
  return Value::dict(kwargs_dict(args, interp, "dict"));
}

}  // namespace

TestFn find_test(const std::string& name) {
  auto it = tests().find(name);
  return it == tests().end() ? nullptr : it->second;
}

Value find_builtin_global(const std::string& name) {
  static const Value range = Value::callable("range", global_range);
  static const Value ns = Value::callable("namespace", global_namespace);
  static const Value dict = Value::callable("dict", global_dict);
  if (name == "range") return range;
  if (name == "namespace") return ns;
  if (name == "dict") return dict;
  return Value();
}

}  // namespace brisk::jinja
