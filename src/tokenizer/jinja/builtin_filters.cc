// jinja2's builtin filters (the subset chat templates use), with transformers' tojson.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/json_dump.h"
#include "tokenizer/jinja/percent_format.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

// jinja2 filters call str() on their input where Python would: undefined becomes "".
std::string text_of(const Value& v) { return v.to_str(); }

// Follows a dotted attribute path ("function.name", "0") with item-then-attribute lookup.
Value get_path(Interpreter& interp, const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    v = numeric ? interp.get_item(v, Value(static_cast<int64_t>(std::stoll(part))))
                : interp.get_item(v, Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value filter_default(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "default", {"default_value", "boolean"});
  bool use_default = v.is_undefined() || (a.get_bool(1, false) && !v.truthy());
  if (!use_default) return v;
  return a.has(0) ? a.get(0) : Value("");
}

Value filter_length(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "length", {});
  switch (v.type()) {
    case Value::Type::kUndefined: return Value(0);
    case Value::Type::kString: return Value(static_cast<int64_t>(utf8_length(v.as_string())));
    case Value::Type::kList: case Value::Type::kTuple:
      return Value(static_cast<int64_t>(v.as_list().size()));
    case Value::Type::kDict: return Value(static_cast<int64_t>(v.as_dict().items.size()));
    default: interp.fail(fmt::format("object of type '{}' has no len()", v.type_name()));
  }
}

Value filter_tojson(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions options;
  options.ensure_ascii = a.get_bool(0, false);
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& indent = a.get(1);
    if (indent.is_string()) options.indent = indent.as_string();
    else options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, a.get_int(1, 0))), ' ');
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const Value& seps = a.get(2);
    if (!seps.is_list() || seps.as_list().size() != 2)
      interp.fail("tojson: separators must be a pair (item_separator, key_separator)");
    options.separators = {seps.as_list()[0].to_str(), seps.as_list()[1].to_str()};
  }
  options.sort_keys = a.get_bool(3, false);
  try {
    return Value(json_dump(v, options));
  } catch (const Error& e) {
    interp.fail(fmt::format("tojson: {}", e.what()));
  }
}

Value filter_trim(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "trim", {"chars"});
  return Value(py_strip(text_of(v), a.get_optional_string(0), true, true));
}

Value filter_string_fn(Interpreter& interp, const Value& v, CallArgs& args,
                       std::string (*fn)(std::string_view), const char* name) {
  ArgBinder a(interp, args, name, {});
  return Value(fn(text_of(v)));
}
Value filter_lower(Interpreter& i, const Value& v, CallArgs& a) { return filter_string_fn(i, v, a, py_lower, "lower"); }
Value filter_upper(Interpreter& i, const Value& v, CallArgs& a) { return filter_string_fn(i, v, a, py_upper, "upper"); }
Value filter_title(Interpreter& i, const Value& v, CallArgs& a) { return filter_string_fn(i, v, a, py_title, "title"); }
Value filter_capitalize(Interpreter& i, const Value& v, CallArgs& a) {
  return filter_string_fn(i, v, a, py_capitalize, "capitalize");
}

Value filter_string(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "string", {});
  return Value(text_of(v));
}

Value filter_safe(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "safe", {});
  return v;
}

Value filter_escape(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "escape", {});
  std::string out;
  for (char c : text_of(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value filter_replace(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "replace", {"old", "new", "count"});
  int64_t count = a.has(2) && !a.get(2).is_none() ? a.get_int(2, -1) : -1;
  return Value(py_replace(text_of(v), a.get_string(0, ""), a.get_string(1, ""), count));
}

Value filter_join(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "join", {"d", "attribute"});
  std::string sep = a.get_string(0, "");
  std::string out;
  bool first = true;
  for (const Value& item : interp.iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += text_of(a.has(1) ? get_path(interp, item, a.get(1).to_str()) : item);
  }
  return Value(std::move(out));
}

Value filter_first(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "first", {});
  ValueList items = interp.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value filter_last(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "last", {});
  ValueList items = interp.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value filter_list(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "list", {});
  return Value::list(interp.iterate(v));
}

Value filter_items(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "items", {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) interp.fail(fmt::format("items: expected a mapping, got {}", v.type_name()));
  ValueList out;
  for (const auto& [k, val] : v.as_dict().items) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

Value filter_reverse(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "reverse", {});
  if (v.is_string()) {
    std::u32string cps = utf8_decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(utf8_encode(cps));
  }
  ValueList items = interp.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

// map(attribute="x", default=...) or map("filter", *args).
Value filter_map(Interpreter& interp, const Value& v, CallArgs& args) {
  ValueList out;
  std::string attribute;
  Value fallback;
  bool by_attribute = false;
  for (auto& [key, value] : args.keyword) {
    if (key == "attribute") {
      attribute = value.to_str();
      by_attribute = true;
    } else if (key == "default") {
      fallback = value;
    }
  }
  if (by_attribute) {
    for (const Value& item : interp.iterate(v)) {
      Value got = get_path(interp, item, attribute);
      out.push_back(got.is_undefined() && !fallback.is_undefined() ? fallback : got);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) interp.fail("map: expected a filter name or attribute=");
  std::string filter = args.positional[0].to_str();
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : interp.iterate(v)) {
    CallArgs call_args = rest;
    out.push_back(interp.apply_filter(filter, item, call_args));
  }
  return Value::list(std::move(out));
}

// select/reject(test, *args) and selectattr/rejectattr(attribute, test, *args).
Value select_impl(Interpreter& interp, const Value& v, CallArgs& args, bool by_attr, bool keep) {
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    if (args.positional.empty()) interp.fail("selectattr/rejectattr: missing the attribute name");
    attribute = args.positional[next++].to_str();
  }
  std::string test;
  if (next < args.positional.size()) test = args.positional[next++].to_str();
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + static_cast<long>(next), args.positional.end());
  rest.keyword = args.keyword;
  ValueList out;
  for (const Value& item : interp.iterate(v)) {
    Value subject = by_attr ? get_path(interp, item, attribute) : item;
    CallArgs test_args = rest;
    bool passed = test.empty() ? subject.truthy() : interp.apply_test(test, subject, test_args);
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Value filter_select(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, false, true); }
Value filter_reject(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, false, false); }
Value filter_selectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, true, true); }
Value filter_rejectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, true, false); }

// Sort key: optional attribute, lower-cased strings unless case_sensitive.
Value sort_key(Interpreter& interp, const Value& item, const Value& attribute, bool case_sensitive) {
  Value key = attribute.is_undefined() || attribute.is_none()
                  ? item
                  : get_path(interp, item, attribute.to_str());
  if (!case_sensitive && key.is_string()) return Value(py_lower(key.as_string()));
  return key;
}

Value filter_sort(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "sort", {"reverse", "case_sensitive", "attribute"});
  bool reverse = a.get_bool(0, false);
  bool case_sensitive = a.get_bool(1, false);
  ValueList items = interp.iterate(v);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) keyed.emplace_back(sort_key(interp, item, a.get(2), case_sensitive), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? interp.compare(y.first, x.first) < 0 : interp.compare(x.first, y.first) < 0;
  });
  ValueList out;
  for (auto& [_, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Value filter_dictsort(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) interp.fail(fmt::format("dictsort: expected a mapping, got {}", v.type_name()));
  bool case_sensitive = a.get_bool(0, false);
  bool by_value = a.get_string(1, "key") == "value";
  bool reverse = a.get_bool(2, false);
  ValueList pairs;
  for (const auto& [k, val] : v.as_dict().items) pairs.push_back(Value::tuple({k, val}));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key(interp, x.as_list()[by_value ? 1 : 0], Value(), case_sensitive);
    Value ky = sort_key(interp, y.as_list()[by_value ? 1 : 0], Value(), case_sensitive);
    return reverse ? interp.compare(ky, kx) < 0 : interp.compare(kx, ky) < 0;
  });
  return Value::list(std::move(pairs));
}

Value filter_unique(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "unique", {"case_sensitive", "attribute"});
  bool case_sensitive = a.get_bool(0, false);
  ValueList out, seen;
  for (const Value& item : interp.iterate(v)) {
    Value key = sort_key(interp, item, a.get(1), case_sensitive);
    bool dup = false;
    for (const Value& s : seen) dup |= s.equals(key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value min_max(Interpreter& interp, const Value& v, CallArgs& args, bool want_max) {
  ArgBinder a(interp, args, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  ValueList items = interp.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool case_sensitive = a.get_bool(0, false);
  size_t best = 0;
  Value best_key = sort_key(interp, items[0], a.get(1), case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(interp, items[i], a.get(1), case_sensitive);
    int c = interp.compare(key, best_key);
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}
Value filter_max(Interpreter& i, const Value& v, CallArgs& a) { return min_max(i, v, a, true); }
Value filter_min(Interpreter& i, const Value& v, CallArgs& a) { return min_max(i, v, a, false); }

Value filter_sum(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "sum", {"attribute", "start"});
  Value total = a.has(1) ? a.get(1) : Value(0);
  for (const Value& item : interp.iterate(v)) {
    Value x = a.has(0) ? get_path(interp, item, a.get(0).to_str()) : item;
    if (!x.is_number() || !total.is_number()) interp.fail("sum: items must be numbers");
    total = (x.is_float() || total.is_float()) ? Value(total.as_double() + x.as_double())
                                               : Value(total.as_int() + x.as_int());
  }
  return total;
}

Value filter_abs(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "abs", {});
  interp.check_defined(v);
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) return Value(static_cast<int64_t>(std::llabs(v.as_int())));
  interp.fail(fmt::format("bad operand type for abs(): '{}'", v.type_name()));
}

Value filter_round(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "round", {"precision", "method"});
  int64_t precision = a.get_int(0, 0);
  std::string method = a.get_string(1, "common");
  interp.check_defined(v);
  if (!v.is_number()) interp.fail(fmt::format("round: expected a number, got {}", v.type_name()));
  if (method == "common" && !v.is_float()) return Value(v.as_int());
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  // "common" is Python's round(): halves go to the even neighbour.
  double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  if (method != "common" && method != "ceil" && method != "floor")
    interp.fail(fmt::format("round: method must be common, ceil or floor, not '{}'", method));
  return Value(r / scale);
}

Value filter_int(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "int", {"default", "base"});
  Value fallback = a.has(0) ? a.get(0) : Value(0);
  if (v.is_bool() || v.is_int()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<int64_t>(v.as_double()));
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(s.c_str(), &end, static_cast<int>(a.get_int(1, 10)));
    if (!s.empty() && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(i));
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value(static_cast<int64_t>(d));
  }
  return fallback;
}

Value filter_float(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "float", {"default"});
  Value fallback = a.has(0) ? a.get(0) : Value(0.0);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value(d);
  }
  return fallback;
}

Value filter_indent(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "indent", {"width", "first", "blank"});
  std::string pad = a.has(0) && a.get(0).is_string() ? a.get(0).as_string()
                                                     : std::string(static_cast<size_t>(a.get_int(0, 4)), ' ');
  bool first = a.get_bool(1, false);
  bool blank = a.get_bool(2, false);
  // jinja2 appends "\n" then splits lines, which drops one trailing newline.
  std::vector<std::string> lines = py_split(text_of(v) + "\n", std::string("\n"), -1);
  lines.pop_back();
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value(std::move(out));
}

Value filter_wordcount(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "wordcount", {});
  int64_t count = 0;
  bool in_word = false;
  for (char32_t cp : utf8_decode(text_of(v))) {
    bool word_char = cp == '_' || (cp < 0x80 ? std::isalnum(static_cast<int>(cp)) != 0 : !py_is_space(cp));
    if (word_char && !in_word) ++count;
    in_word = word_char;
  }
  return Value(count);
}

Value filter_center(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "center", {"width"});
  std::string s = text_of(v);
  int64_t width = a.get_int(0, 80);
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value(s);
  int64_t total = width - len;
  // Python's str.center puts the extra space on the right unless width is odd and len even.
  int64_t left = total / 2 + (total & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(total - left), ' '));
}

Value filter_attr(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "attr", {"name"});
  // Python getattr only: unlike `x.name`, a dict key is not an attribute here.
  std::string name = a.get_string(0, "");
  if (v.is_dict()) {
    Value method = find_method(v, name);
    if (!method.is_undefined()) return method;
    return Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
  }
  return interp.get_attr(v, name);
}

// `"%s-%d"|format(a, b)` is Python's "%s-%d" % (a, b).
Value filter_format(Interpreter& interp, const Value& v, CallArgs& args) {
  if (!args.keyword.empty()) {
    ValueDict named;
    for (auto& [key, value] : args.keyword) named.set(Value(key), value);
    return Value(percent_format(interp, text_of(v), Value::dict(std::move(named))));
  }
  return Value(percent_format(interp, text_of(v), Value::tuple(args.positional)));
}

Value filter_pprint(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder a(interp, args, "pprint", {});
  return Value(v.repr());
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> table = {
      {"abs", filter_abs}, {"attr", filter_attr}, {"capitalize", filter_capitalize},
      {"center", filter_center}, {"count", filter_length}, {"d", filter_default},
      {"default", filter_default}, {"dictsort", filter_dictsort}, {"e", filter_escape},
      {"escape", filter_escape}, {"first", filter_first}, {"float", filter_float}, {"format", filter_format},
      {"indent", filter_indent}, {"int", filter_int}, {"items", filter_items},
      {"join", filter_join}, {"last", filter_last}, {"length", filter_length},
      {"list", filter_list}, {"lower", filter_lower}, {"map", filter_map}, {"max", filter_max},
      {"min", filter_min}, {"pprint", filter_pprint}, {"reject", filter_reject},
      {"rejectattr", filter_rejectattr}, {"replace", filter_replace},
      {"reverse", filter_reverse}, {"round", filter_round}, {"safe", filter_safe},
      {"select", filter_select}, {"selectattr", filter_selectattr}, {"sort", filter_sort},
      {"string", filter_string}, {"sum", filter_sum}, {"title", filter_title},
      {"tojson", filter_tojson}, {"trim", filter_trim}, {"unique", filter_unique},
      {"upper", filter_upper}, {"wordcount", filter_wordcount},
  };
  return table;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = filters().find(name);
  return it == filters().end() ? nullptr : it->second;
}

}  // namespace brisk::jinja
