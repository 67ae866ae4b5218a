// Python methods of str, dict and list that chat templates call (`content.split('</think>')`,
// `message.get('x')`). Mutating methods exist but fail when called, as in Hugging Face's
// ImmutableSandboxedEnvironment ("access to attribute 'append' of 'list' object is unsafe").
#include <cstring>

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

using Method = Value (*)(Interpreter& interp, const Value& self, CallArgs& args);

Value str_strip_impl(Interpreter& interp, const Value& self, CallArgs& args, const char* name,
                     bool left, bool right) {
  ArgBinder a(interp, args, name, {"chars"});
  return Value(py_strip(self.as_string(), a.get_optional_string(0), left, right));
}
Value str_strip(Interpreter& i, const Value& s, CallArgs& a) { return str_strip_impl(i, s, a, "strip", true, true); }
Value str_lstrip(Interpreter& i, const Value& s, CallArgs& a) { return str_strip_impl(i, s, a, "lstrip", true, false); }
Value str_rstrip(Interpreter& i, const Value& s, CallArgs& a) { return str_strip_impl(i, s, a, "rstrip", false, true); }

Value str_affix(Interpreter& interp, const Value& self, CallArgs& args, bool prefix) {
  ArgBinder a(interp, args, prefix ? "startswith" : "endswith", {"prefix", "start", "end"});
  if (a.has(1) || a.has(2)) interp.fail("startswith/endswith: start and end are not supported");
  const std::string& s = self.as_string();
  std::vector<std::string> candidates;
  const Value& arg = a.get(0);
  if (arg.is_list()) {
    for (const Value& v : arg.as_list()) candidates.push_back(v.to_str());
  } else if (arg.is_string()) {
    candidates.push_back(arg.as_string());
  } else {
    interp.fail(fmt::format("{} arg must be str or a tuple of str, not {}",
                            prefix ? "startswith" : "endswith", arg.type_name()));
  }
  for (const std::string& c : candidates) {
    if (c.size() > s.size()) continue;
    if (prefix ? s.compare(0, c.size(), c) == 0 : s.compare(s.size() - c.size(), c.size(), c) == 0)
      return Value(true);
  }
  return Value(false);
}
Value str_startswith(Interpreter& i, const Value& s, CallArgs& a) { return str_affix(i, s, a, true); }
Value str_endswith(Interpreter& i, const Value& s, CallArgs& a) { return str_affix(i, s, a, false); }

Value to_list(const std::vector<std::string>& parts) {
  ValueList out;
  for (const std::string& p : parts) out.emplace_back(p);
  return Value::list(std::move(out));
}

Value str_split(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "split", {"sep", "maxsplit"});
  std::optional<std::string> sep = a.get_optional_string(0);
  if (sep && sep->empty()) interp.fail("split: empty separator");
  return to_list(py_split(self.as_string(), sep, a.get_int(1, -1)));
}

Value str_rsplit(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "rsplit", {"sep", "maxsplit"});
  std::optional<std::string> sep = a.get_optional_string(0);
  int64_t maxsplit = a.get_int(1, -1);
  if (!sep || maxsplit < 0) return to_list(py_split(self.as_string(), sep, maxsplit));
  if (sep->empty()) interp.fail("rsplit: empty separator");
  // Split from the right: find separators backwards, then restore order.
  const std::string& s = self.as_string();
  std::vector<std::string> parts;
  size_t end = s.size();
  while (static_cast<int64_t>(parts.size()) < maxsplit) {
    if (end < sep->size()) break;
    size_t pos = s.rfind(*sep, end - sep->size());
    if (pos == std::string::npos) break;
    parts.insert(parts.begin(), s.substr(pos + sep->size(), end - pos - sep->size()));
    end = pos;
  }
  parts.insert(parts.begin(), s.substr(0, end));
  return to_list(parts);
}

Value str_splitlines(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "splitlines", {"keepends"});
  std::vector<std::string> parts = py_split(self.as_string(), std::string("\n"), -1);
  if (!parts.empty() && parts.back().empty()) parts.pop_back();
  return to_list(parts);
}

Value str_replace(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "replace", {"old", "new", "count"});
  return Value(py_replace(self.as_string(), a.get_string(0, ""), a.get_string(1, ""), a.get_int(2, -1)));
}

template <std::string (*Fn)(std::string_view)>
Value str_map(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "str method", {});
  return Value(Fn(self.as_string()));
}

Value str_find(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "find", {"sub"});
  return Value(py_find(self.as_string(), a.get_string(0, "")));
}

Value str_count(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "count", {"sub"});
  return Value(py_count(self.as_string(), a.get_string(0, "")));
}

Value str_join(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "join", {"iterable"});
  std::string out;
  bool first = true;
  for (const Value& item : interp.iterate(a.get(0))) {
    if (!item.is_string())
      interp.fail(fmt::format("join: expected str items, found {}", item.type_name()));
    if (!first) out += self.as_string();
    first = false;
    out += item.as_string();
  }
  return Value(std::move(out));
}

template <bool (*Pred)(char32_t)>
Value str_is(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "str.is*", {});
  std::u32string cps = utf8_decode(self.as_string());
  if (cps.empty()) return Value(false);
  for (char32_t cp : cps)
    if (!Pred(cp)) return Value(false);
  return Value(true);
}
bool is_digit_cp(char32_t cp) { return cp >= '0' && cp <= '9'; }
bool is_alpha_cp(char32_t cp) { return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z'; }
bool is_alnum_cp(char32_t cp) { return is_digit_cp(cp) || is_alpha_cp(cp); }

// str.format with {}, {0} and {name} fields (no format specs or conversions).
Value str_format(Interpreter& interp, const Value& self, CallArgs& args) {
  const std::string& f = self.as_string();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if ((c == '{' || c == '}') && i + 1 < f.size() && f[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = f.find('}', i);
    if (close == std::string::npos) interp.fail("format: single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos)
      interp.fail("format: format specs and conversions are not supported");
    Value v;
    if (field.empty() || field.find_first_not_of("0123456789") == std::string::npos) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) interp.fail("format: replacement index out of range");
      v = args.positional[index];
    } else {
      for (auto& [key, value] : args.keyword)
        if (key == field) v = value;
      if (v.is_undefined()) interp.fail(fmt::format("format: missing keyword argument '{}'", field));
    }
    out += v.to_str();
    i = close;
  }
  return Value(std::move(out));
}

Value dict_get(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "get", {"key", "default"});
  if (const Value* v = self.as_dict().find(a.get(0))) return *v;
  return a.has(1) ? a.get(1) : Value::none();
}

Value dict_items(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "items", {});
  ValueList out;
  for (const auto& [k, v] : self.as_dict().items) out.push_back(Value::tuple({k, v}));
  return Value::list(std::move(out));
}

Value dict_keys(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "keys", {});
  ValueList out;
  for (const auto& [k, _] : self.as_dict().items) out.push_back(k);
  return Value::list(std::move(out));
}

Value dict_values(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "values", {});
  ValueList out;
  for (const auto& [_, v] : self.as_dict().items) out.push_back(v);
  return Value::list(std::move(out));
}

Value list_index(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "index", {"value"});
  const ValueList& items = self.as_list();
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].equals(a.get(0))) return Value(static_cast<int64_t>(i));
  interp.fail(fmt::format("{} is not in list", a.get(0).repr()));
}

Value list_count(Interpreter& interp, const Value& self, CallArgs& args) {
  ArgBinder a(interp, args, "count", {"value"});
  int64_t n = 0;
  for (const Value& v : self.as_list()) n += v.equals(a.get(0));
  return Value(n);
}

struct MethodEntry {
  const char* name;
  Method fn;  // nullptr: exists in Python but mutates, so the sandbox refuses it
};

constexpr MethodEntry kStrMethods[] = {
    {"strip", str_strip}, {"lstrip", str_lstrip}, {"rstrip", str_rstrip},
    {"startswith", str_startswith}, {"endswith", str_endswith}, {"split", str_split},
    {"rsplit", str_rsplit}, {"splitlines", str_splitlines}, {"replace", str_replace},
    {"upper", str_map<py_upper>}, {"lower", str_map<py_lower>}, {"title", str_map<py_title>},
    {"capitalize", str_map<py_capitalize>}, {"find", str_find}, {"count", str_count},
    {"join", str_join}, {"format", str_format}, {"isdigit", str_is<is_digit_cp>},
    {"isalpha", str_is<is_alpha_cp>}, {"isalnum", str_is<is_alnum_cp>},
    {"isspace", str_is<py_is_space>},
};
constexpr MethodEntry kDictMethods[] = {
    {"get", dict_get}, {"items", dict_items}, {"keys", dict_keys}, {"values", dict_values},
    {"update", nullptr}, {"pop", nullptr}, {"popitem", nullptr}, {"setdefault", nullptr},
    {"clear", nullptr},
};
constexpr MethodEntry kListMethods[] = {
    {"index", list_index}, {"count", list_count}, {"append", nullptr}, {"extend", nullptr},
    {"insert", nullptr}, {"pop", nullptr}, {"remove", nullptr}, {"reverse", nullptr},
    {"sort", nullptr}, {"clear", nullptr},
};

template <size_t N>
const MethodEntry* find_entry(const MethodEntry (&table)[N], const std::string& name) {
  for (const MethodEntry& e : table)
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

Value find_method(const Value& target, const std::string& name) {
  const MethodEntry* entry = nullptr;
  if (target.is_string()) entry = find_entry(kStrMethods, name);
  else if (target.is_dict()) entry = find_entry(kDictMethods, name);
  else if (target.is_list()) entry = find_entry(kListMethods, name);
  if (!entry) return Value();
  std::string type = target.type_name();
  if (!entry->fn) {
    return Value::callable(name, [name, type](CallArgs&, Interpreter& interp) -> Value {
      interp.fail(fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type));
    });
  }
  Method fn = entry->fn;
  return Value::callable(type + "." + name, [fn, target](CallArgs& args, Interpreter& interp) {
    return fn(interp, target, args);
  });
}

}  // namespace brisk::jinja
