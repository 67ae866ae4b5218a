// Registries of jinja2's builtin filters, tests, global functions and the Python methods of
// str/dict/list that templates call, plus argument binding shared by all of them.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/value.h"

namespace brisk::jinja {

using FilterFn = Value (*)(Interpreter& interp, const Value& target, CallArgs& args);
using TestFn = bool (*)(Interpreter& interp, const Value& target, CallArgs& args);

// nullptr when no such filter/test exists.
FilterFn find_filter(const std::string& name);
TestFn find_test(const std::string& name);
// A bound method (`"a,b".split`) as a callable; undefined when `target` has no such method.
Value find_method(const Value& target, const std::string& name);
// range, namespace, dict: undefined when `name` is none of them.
Value find_builtin_global(const std::string& name);

// Binds positional and keyword arguments to named parameters like a Python signature.
class ArgBinder {
 public:
  ArgBinder(Interpreter& interp, CallArgs& args, const char* function,
            std::initializer_list<const char*> params);
  bool has(size_t i) const { return given_[i]; }
  const Value& get(size_t i) const { return values_[i]; }
  // Typed getters with a default when the argument is absent; wrong types fail by name.
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const;
  std::string get_string(size_t i, const std::string& fallback) const;
  std::optional<std::string> get_optional_string(size_t i) const;

 private:
  Interpreter& interp_;
  const char* function_;
  std::vector<const char*> params_;
  std::vector<Value> values_;
  std::vector<bool> given_;
};

}  // namespace brisk::jinja
