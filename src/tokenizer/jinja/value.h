// A dynamic Jinja2 value with Python semantics: undefined, none, bool, int, float, string,
// list/tuple, dict (insertion-ordered), callable (builtins, macros, bound methods) and
// namespace. Lists, dicts and strings are immutable and shared, as Hugging Face renders in an
// ImmutableSandboxedEnvironment; only a namespace can be changed (`set ns.attr = ...`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace brisk::jinja {

class Value;
class Interpreter;

using ValueList = std::vector<Value>;

// Insertion-ordered mapping; templates hold small dicts, so lookups scan linearly.
struct ValueDict {
  std::vector<std::pair<Value, Value>> items;

  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  // Replaces the value of an existing key or appends a new entry.
  void set(Value key, Value value);
};

// Arguments of a call: positional then keyword (in source order).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// A builtin or macro. `fn` receives the interpreter so macros can render and builtins can
// report errors at the current line.
struct Callable {
  std::string name;
  std::function<Value(CallArgs& args, Interpreter& interp)> fn;
};

struct Namespace {
  ValueDict attrs;
};

class Value {
 public:
  enum class Type : uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict, kCallable, kNamespace,
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double f);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(ValueDict dict);
  static Value callable(std::string name,
                        std::function<Value(CallArgs& args, Interpreter& interp)> fn);
  static Value make_namespace(ValueDict attrs);
  // null -> none; objects keep their key order (ordered_json).
  static Value from_json(const nlohmann::ordered_json& json);

  Type type() const { return type_; }
  bool is_undefined() const { return type_ == Type::kUndefined; }
  bool is_none() const { return type_ == Type::kNone; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_float() const { return type_ == Type::kFloat; }
  // Python's numbers.Number includes bool.
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return type_ == Type::kString; }
  bool is_list() const { return type_ == Type::kList || type_ == Type::kTuple; }
  bool is_tuple() const { return type_ == Type::kTuple; }
  bool is_dict() const { return type_ == Type::kDict; }
  bool is_callable() const { return type_ == Type::kCallable; }
  bool is_namespace() const { return type_ == Type::kNamespace; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;  // int or bool
  double as_double() const;  // int, float or bool
  const std::string& as_string() const;
  const ValueList& as_list() const;
  const ValueDict& as_dict() const;
  const Callable& as_callable() const;
  Namespace& as_namespace() const;
  // What an undefined value was looked up as, for error messages ("'x' is undefined").
  const std::string& undefined_hint() const;

  // Python's bool(x).
  bool truthy() const;
  // Python's str(x): what `{{ x }}` prints (undefined prints nothing).
  std::string to_str() const;
  // Python's repr(x): how values nested in printed lists/dicts appear.
  std::string repr() const;
  // Python type name for error messages ("str", "dict", "NoneType").
  std::string type_name() const;

  // Python ==: numbers compare by value across int/float/bool; undefined equals undefined.
  bool equals(const Value& other) const;

 private:
  using Data = std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
                            std::shared_ptr<const ValueList>, std::shared_ptr<const ValueDict>,
                            std::shared_ptr<const Callable>, std::shared_ptr<Namespace>>;
  Value(Type type, Data data) : type_(type), data_(std::move(data)) {}

  Type type_ = Type::kUndefined;
  Data data_;
};

// Python's repr of a float: shortest round-trip digits, "1.0", "1e+20", "1e-05", "inf", "nan".
std::string format_python_float(double value);

}  // namespace brisk::jinja
