#include "tokenizer/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {

const Value* ValueDict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (k.equals(key)) return &v;
  return nullptr;
}

const Value* ValueDict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void ValueDict::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (k.equals(key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  return Value(Type::kUndefined, std::make_shared<const std::string>(std::move(hint)));
}
Value Value::none() { return Value(Type::kNone, std::monostate{}); }
Value::Value(bool b) : type_(Type::kBool), data_(b) {}
Value::Value(int64_t i) : type_(Type::kInt), data_(i) {}
Value::Value(double f) : type_(Type::kFloat), data_(f) {}
Value::Value(std::string s)
    : type_(Type::kString), data_(std::make_shared<const std::string>(std::move(s))) {}
Value Value::list(ValueList items) {
  return Value(Type::kList, std::make_shared<const ValueList>(std::move(items)));
}
Value Value::tuple(ValueList items) {
  return Value(Type::kTuple, std::make_shared<const ValueList>(std::move(items)));
}
Value Value::dict(ValueDict dict) {
  return Value(Type::kDict, std::make_shared<const ValueDict>(std::move(dict)));
}
Value Value::callable(std::string name,
                      std::function<Value(CallArgs& args, Interpreter& interp)> fn) {
  return Value(Type::kCallable,
               std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)}));
}
Value Value::make_namespace(ValueDict attrs) {
  return Value(Type::kNamespace, std::make_shared<Namespace>(Namespace{std::move(attrs)}));
}

Value Value::from_json(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(json.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json(item));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict dict;
      dict.items.reserve(json.size());
      for (const auto& [key, item] : json.items()) dict.items.emplace_back(Value(key), from_json(item));
      return Value::dict(std::move(dict));
    }
    default:
      throw_error(ErrorCode::kInvalidArgument,
                  "chat template context: unsupported JSON value of type {}", json.type_name());
  }
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

const std::string& Value::as_string() const {
  return *std::get<std::shared_ptr<const std::string>>(data_);
}
const ValueList& Value::as_list() const {
  return *std::get<std::shared_ptr<const ValueList>>(data_);
}
const ValueDict& Value::as_dict() const {
  return *std::get<std::shared_ptr<const ValueDict>>(data_);
}
const Callable& Value::as_callable() const {
  return *std::get<std::shared_ptr<const Callable>>(data_);
}
Namespace& Value::as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;
  if (auto* p = std::get_if<std::shared_ptr<const std::string>>(&data_)) return **p;
  return kEmpty;
}

bool Value::truthy() const {
  switch (type_) {
    case Type::kUndefined: case Type::kNone: return false;
    case Type::kBool: return as_bool();
    case Type::kInt: return as_int() != 0;
    case Type::kFloat: return as_double() != 0.0;
    case Type::kString: return !as_string().empty();
    case Type::kList: case Type::kTuple: return !as_list().empty();
    case Type::kDict: return !as_dict().items.empty();
    case Type::kCallable: case Type::kNamespace: return true;
  }
  return false;
}

std::string format_python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci is "[-]d[.ddd]e[+-]XX": split into sign, digits and the decimal exponent.
  size_t e = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e + 1);
  std::string mantissa = sci.substr(0, e);
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    // Python's repr switches to exponent notation outside [1e-4, 1e16).
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out += digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  }
  return out;
}

std::string Value::to_str() const {
  switch (type_) {
    case Type::kUndefined: return "";
    case Type::kNone: return "None";
    case Type::kBool: return as_bool() ? "True" : "False";
    case Type::kInt: return std::to_string(as_int());
    case Type::kFloat: return format_python_float(as_double());
    case Type::kString: return as_string();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (type_) {
    case Type::kUndefined: return "Undefined";
    case Type::kString: return py_repr_string(as_string());
    case Type::kList: case Type::kTuple: {
      const ValueList& items = as_list();
      std::string out = is_tuple() ? "(" : "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += items[i].repr();
      }
      if (is_tuple() && items.size() == 1) out += ",";
      out += is_tuple() ? ")" : "]";
      return out;
    }
    case Type::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}";
    }
    case Type::kCallable: return "<function " + as_callable().name + ">";
    case Type::kNamespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, v] : as_namespace().attrs.items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}>";
    }
    default: return to_str();
  }
}

std::string Value::type_name() const {
  switch (type_) {
    case Type::kUndefined: return "Undefined";
    case Type::kNone: return "NoneType";
    case Type::kBool: return "bool";
    case Type::kInt: return "int";
    case Type::kFloat: return "float";
    case Type::kString: return "str";
    case Type::kList: return "list";
    case Type::kTuple: return "tuple";
    case Type::kDict: return "dict";
    case Type::kCallable: return "function";
    case Type::kNamespace: return "Namespace";
  }
  return "object";
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() == other.as_double();
    return as_int() == other.as_int();
  }
  if (is_list() && other.is_list()) {
    // Python: a list never equals a tuple.
    if (is_tuple() != other.is_tuple()) return false;
    const ValueList& a = as_list();
    const ValueList& b = other.as_list();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].equals(b[i])) return false;
    return true;
  }
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::kUndefined: case Type::kNone: return true;
    case Type::kString: return as_string() == other.as_string();
    case Type::kDict: {
      const ValueDict& a = as_dict();
      const ValueDict& b = other.as_dict();
      if (a.items.size() != b.items.size()) return false;
      for (const auto& [k, v] : a.items) {
        const Value* w = b.find(k);
        if (!w || !v.equals(*w)) return false;
      }
      return true;
    }
    case Type::kCallable: return &as_callable() == &other.as_callable();
    case Type::kNamespace: return &as_namespace() == &other.as_namespace();
    default: return false;
  }
}

}  // namespace brisk::jinja
