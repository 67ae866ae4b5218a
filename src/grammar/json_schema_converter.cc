#include "grammar/json_schema_converter.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/ebnf_parser.h"
#include "grammar/integer_range.h"
#include "grammar/json_formats.h"
#include "grammar/regex_converter.h"

namespace brisk::grammar {

namespace {

using Json = nlohmann::ordered_json;

// The value rules every schema grammar has (xgrammar's basic_* rules). `WS` stands for the
// whitespace between tokens. basic_string_sub's lookahead names what may follow a string (a
// key or a value) so that the mask cache rejects most tokens that close a string early.
constexpr const char* kBasicRules = R"(basic_escape ::= ["\\/bfnrt] | "u" [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9]
basic_string_sub ::= ("\"" | [^\0-\x1f\"\\\r\n] basic_string_sub | "\\" basic_escape basic_string_sub) (= [ \n\r\t]* [,}\]:])
basic_any ::= basic_number | basic_string | basic_boolean | basic_null | basic_array | basic_object
basic_integer ::= "0" | "-"? [1-9] [0-9]*
basic_number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\-]? [0-9]+)?
basic_string ::= "\"" basic_string_sub
basic_boolean ::= "true" | "false"
basic_null ::= "null"
basic_array ::= "[" WS basic_any (WS "," WS basic_any)* WS "]" | "[" WS "]"
basic_object ::= "{" WS basic_string WS ":" WS basic_any (WS "," WS basic_string WS ":" WS basic_any)* WS "}" | "{" WS "}"
)";

// An EBNF string literal of raw bytes.
std::string literal(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, const JsonSchemaOptions& options)
      : root_(root), ws_(options.any_whitespace ? "[ \\n\\r\\t]*" : ""), strict_(options.strict_mode) {}

  std::string run() {
    ref_rules_["#"] = "root";
    std::string body = convert(root_, "root", "#");
    std::string text = "root ::= " + body + "\n";
    for (const std::string& rule : rules_) text += rule + "\n";
    std::string basics = kBasicRules;
    for (size_t at = basics.find("WS"); at != std::string::npos; at = basics.find("WS", at)) {
      basics.replace(at, 2, ws_.empty() ? "\"\"" : ws_);
    }
    return text + basics;
  }

  const auto& patterns() const { return patterns_; }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw_error(ErrorCode::kInvalidArgument, "json schema at {}: {}", pointer, what);
  }

  std::string fresh_name(const std::string& hint) {
    std::string name = hint;
    for (int i = 1; !used_names_.insert(name).second; ++i) name = fmt::format("{}_{}", hint, i);
    return name;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    std::string name = fresh_name(hint);
    rules_.push_back(name + " ::= " + body);
    return name;
  }

  std::string add_regex_rule(const std::string& hint, const std::string& regex) {
    std::string name = fresh_name(hint);
    rules_.push_back(name + " ::= \"\"");  // the body comes from regex_to_grammar after parsing
    patterns_.push_back({name, regex, false});
    return name;
  }

  // A JSON string whose content is `content` (EBNF) or, when `regex` is set, that regex. The
  // quotes belong to the rule and so does basic_string_sub's lookahead (a string is followed
  // by a separator, a closing bracket or a colon), so that the mask cache decides most tokens
  // that close the string without running the full parser.
  std::string add_string_rule(const std::string& hint, const std::string& content, const char* regex = nullptr) {
    std::string name = fresh_name(hint);
    std::string lookahead = " (= " + ws_ + " [,}\\]:])";
    if (regex != nullptr) {
      rules_.push_back(name + " ::= \"\"" + lookahead);
      patterns_.push_back({name, regex, true});
    } else {
      rules_.push_back(name + " ::= \"\\\"\" " + content + " \"\\\"\"" + lookahead);
    }
    return name;
  }

  std::string sep() const { return ws_ + " \",\" " + ws_; }

  std::string convert(const Json& schema, const std::string& name, const std::string& pointer) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(pointer, "the schema `false` matches nothing");
      return "basic_any";
    }
    if (!schema.is_object()) fail(pointer, "a schema must be an object or a boolean");
    if (schema.contains("$ref")) return convert_ref(schema["$ref"], pointer);
    if (schema.contains("const")) return literal(schema["const"].dump(-1, ' ', false));
    if (schema.contains("enum")) {
      const Json& values = schema["enum"];
      if (!values.is_array() || values.empty()) fail(pointer + "/enum", "must be a non-empty array");
      std::string out;
      for (const Json& v : values) out += (out.empty() ? "(" : " | ") + literal(v.dump(-1, ' ', false));
      return out + ")";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      const Json& options = schema[key];
      if (!options.is_array() || options.empty()) fail(pointer + "/" + key, "must be a non-empty array");
      std::string out;
      for (size_t i = 0; i < options.size(); ++i) {
        std::string sub = convert(options[i], fmt::format("{}_case_{}", name, i), fmt::format("{}/{}/{}", pointer, key, i));
        out += (out.empty() ? "(" : " | ") + sub;
      }
      return out + ")";
    }
    if (schema.contains("allOf")) return convert(merge_all_of(schema, pointer), name, pointer);
    if (schema.contains("type")) {
      const Json& type = schema["type"];
      if (type.is_string()) return convert_typed(schema, type.get<std::string>(), name, pointer);
      if (!type.is_array() || type.empty()) fail(pointer + "/type", "must be a string or a non-empty array");
      std::string out;
      for (const Json& t : type) {
        if (!t.is_string()) fail(pointer + "/type", "must hold type names");
        out += (out.empty() ? "(" : " | ") + convert_typed(schema, t.get<std::string>(), name, pointer);
      }
      return out + ")";
    }
    if (schema.contains("properties") || schema.contains("additionalProperties") || schema.contains("required")) {
      return convert_typed(schema, "object", name, pointer);
    }
    if (schema.contains("items") || schema.contains("prefixItems")) return convert_typed(schema, "array", name, pointer);
    return "basic_any";
  }

  std::string convert_ref(const Json& ref, const std::string& pointer) {
    if (!ref.is_string()) fail(pointer + "/$ref", "must be a string");
    std::string path = ref.get<std::string>();
    auto it = ref_rules_.find(path);
    if (it != ref_rules_.end()) return it->second;
    if (path.rfind("#/", 0) != 0) fail(pointer + "/$ref", fmt::format("only local references (#/...) are supported, not {:?}", path));
    const Json* target = &root_;
    std::string hint = "defs";
    size_t start = 2;
    while (start <= path.size()) {
      size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      std::string segment = path.substr(start, end - start);
      for (size_t at = segment.find("~1"); at != std::string::npos; at = segment.find("~1", at)) segment.replace(at, 2, "/");
      for (size_t at = segment.find("~0"); at != std::string::npos; at = segment.find("~0", at)) segment.replace(at, 2, "~");
      if (!target->is_object() || !target->contains(segment)) {
        fail(pointer + "/$ref", fmt::format("{:?} does not resolve", path));
      }
      target = &(*target)[segment];
      start = end + 1;
      if (segment != "$defs" && segment != "definitions") hint += "_" + segment;
    }
    std::string rule_hint;
    for (char c : hint) rule_hint += (std::isalnum(uint8_t(c)) || c == '_') ? c : '_';
    std::string name = fresh_name(rule_hint);
    ref_rules_[path] = name;  // before converting: the definition may refer to itself
    size_t slot = rules_.size();
    rules_.push_back("");
    rules_[slot] = name + " ::= " + convert(*target, name, path);
    return name;
  }

  Json merge_all_of(const Json& schema, const std::string& pointer) {
    const Json& parts = schema["allOf"];
    if (!parts.is_array() || parts.empty()) fail(pointer + "/allOf", "must be a non-empty array");
    Json merged = schema;
    merged.erase("allOf");
    for (size_t i = 0; i < parts.size(); ++i) {
      const Json& part = parts[i];
      if (!part.is_object()) fail(fmt::format("{}/allOf/{}", pointer, i), "must be an object");
      for (auto it = part.begin(); it != part.end(); ++it) {
        const std::string& key = it.key();
        if (key == "properties" && merged.contains("properties")) {
          for (auto p = it.value().begin(); p != it.value().end(); ++p) merged["properties"][p.key()] = p.value();
        } else if (key == "required" && merged.contains("required")) {
          for (const Json& r : it.value()) merged["required"].push_back(r);
        } else if (merged.contains(key) && merged[key] != it.value() && key != "description" && key != "title") {
          throw_error(ErrorCode::kUnsupported, "json schema at {}/allOf/{}: cannot merge {:?} with an earlier value",
                      pointer, i, key);
        } else {
          merged[key] = it.value();
        }
      }
    }
    return merged;
  }

  std::string convert_typed(const Json& schema, const std::string& type, const std::string& name,
                            const std::string& pointer) {
    if (type == "string") return convert_string(schema, name, pointer);
    if (type == "integer") return convert_integer(schema, name, pointer);
    if (type == "number") return convert_number(schema, name, pointer);
    if (type == "boolean") return "basic_boolean";
    if (type == "null") return "basic_null";
    if (type == "object") return convert_object(schema, name, pointer);
    if (type == "array") return convert_array(schema, name, pointer);
    fail(pointer + "/type", fmt::format("unknown type {:?}", type));
  }

  std::optional<int64_t> get_int(const Json& schema, const char* key, const std::string& pointer) {
    if (!schema.contains(key)) return std::nullopt;
    const Json& v = schema[key];
    if (!v.is_number()) fail(pointer + "/" + key, "must be a number");
    // Within +-2^53, where a double holds every integer (and bounds adjusted by one stay in range).
    constexpr double kLimit = 9007199254740992.0;
    const double d = v.get<double>();
    if (!(std::abs(d) <= kLimit)) fail(pointer + "/" + key, "must be an integer in [-2^53, 2^53]");
    if (d != std::floor(d)) fail(pointer + "/" + key, "must be an integer");
    return static_cast<int64_t>(d);
  }

  std::string convert_string(const Json& schema, const std::string& name, const std::string& pointer) {
    auto min_length = get_int(schema, "minLength", pointer);
    auto max_length = get_int(schema, "maxLength", pointer);
    if (min_length || max_length) {
      int64_t lo = min_length.value_or(0), hi = max_length.value_or(-1);
      if (lo < 0 || (hi != -1 && hi < lo)) fail(pointer, "minLength/maxLength form an empty range");
      return add_string_rule(name + "_string", fmt::format("[^\"\\\\\\r\\n]{{{},{}}}", lo, hi == -1 ? std::string() : std::to_string(hi)));
    }
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) fail(pointer + "/pattern", "must be a string");
      return add_string_rule(name + "_pattern", "", schema["pattern"].get_ref<const std::string&>().c_str());
    }
    if (schema.contains("format")) {
      if (!schema["format"].is_string()) fail(pointer + "/format", "must be a string");
      if (const char* regex = json_format_regex(schema["format"].get<std::string>())) {
        return add_string_rule(name + "_format", "", regex);
      }
    }
    return "basic_string";
  }

  std::string convert_integer(const Json& schema, const std::string& name, const std::string& pointer) {
    std::optional<int64_t> lo = get_int(schema, "minimum", pointer);
    std::optional<int64_t> hi = get_int(schema, "maximum", pointer);
    if (auto x = get_int(schema, "exclusiveMinimum", pointer)) lo = lo ? std::max(*lo, *x + 1) : *x + 1;
    if (auto x = get_int(schema, "exclusiveMaximum", pointer)) hi = hi ? std::min(*hi, *x - 1) : *x - 1;
    if (!lo && !hi) return "basic_integer";
    if (lo && hi && *lo > *hi) fail(pointer, "the integer bounds leave no value");
    return add_regex_rule(name + "_range", integer_range_regex(lo, hi));
  }

  // Bounds make the number a decimal with at most 6 fraction digits (xgrammar's choice);
  // bounds that are not integers leave the number unbounded.
  std::string convert_number(const Json& schema, const std::string& name, const std::string& pointer) {
    std::optional<double> lo, hi;
    bool exclusive_lo = false, exclusive_hi = false;
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!schema.contains(key)) continue;
      if (!schema[key].is_number()) fail(pointer + "/" + key, "must be a number");
      double v = schema[key].get<double>();
      std::string k = key;
      if (k == "minimum" && (!lo || v > *lo)) lo = v;
      if (k == "maximum" && (!hi || v < *hi)) hi = v;
      if (k == "exclusiveMinimum" && (!lo || v >= *lo)) lo = v, exclusive_lo = true;
      if (k == "exclusiveMaximum" && (!hi || v <= *hi)) hi = v, exclusive_hi = true;
    }
    if (!lo && !hi) return "basic_number";
    auto integral = [](const std::optional<double>& v) {
      return !v || (*v == double(int64_t(*v)) && std::abs(*v) < 1e15);
    };
    if (!integral(lo) || !integral(hi)) return "basic_number";
    std::optional<int64_t> int_lo, int_hi;
    if (lo) int_lo = int64_t(*lo);
    if (hi) int_hi = int64_t(*hi);
    std::string regex = number_range_regex(int_lo, exclusive_lo, int_hi, exclusive_hi);
    if (regex.empty()) fail(pointer, "the number bounds leave no value");
    return add_regex_rule(name + "_range", regex);
  }

  std::string convert_object(const Json& schema, const std::string& name, const std::string& pointer) {
    const Json empty = Json::object();
    const Json& properties = schema.contains("properties") ? schema["properties"] : empty;
    if (!properties.is_object()) fail(pointer + "/properties", "must be an object");
    std::set<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) fail(pointer + "/required", "must be an array");
      for (const Json& r : schema["required"]) {
        if (!r.is_string()) fail(pointer + "/required", "must hold property names");
        required.insert(r.get<std::string>());
      }
    }
    for (const std::string& r : required) {
      if (!properties.contains(r)) fail(pointer + "/required", fmt::format("{:?} is not among the properties", r));
    }
    // The value schema of additional properties; "" when none are allowed.
    std::string additional;
    if (schema.contains("additionalProperties")) {
      const Json& a = schema["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) additional = convert(a, name + "_addl", pointer + "/additionalProperties");
    } else if (!strict_ || properties.empty()) {
      additional = "basic_any";
    }
    if (properties.empty()) {
      std::string kv = "basic_string " + ws_ + " \":\" " + ws_ + " " + additional;
      if (schema.contains("patternProperties")) kv = pattern_properties(schema["patternProperties"], name, pointer);
      else if (additional.empty()) return "(\"{\" " + ws_ + " \"}\")";
      int64_t min = get_int(schema, "minProperties", pointer).value_or(0);
      int64_t max = get_int(schema, "maxProperties", pointer).value_or(-1);
      if (min < 0 || (max != -1 && max < min)) fail(pointer, "minProperties/maxProperties form an empty range");
      if (additional == "basic_any" && min == 0 && max == -1 && !schema.contains("patternProperties")) return "basic_object";
      if (max == 0) return "(\"{\" " + ws_ + " \"}\")";
      std::string more = fmt::format("({} {}){{{},{}}}", sep(), kv, std::max<int64_t>(min - 1, 0),
                                     max == -1 ? std::string() : std::to_string(max - 1));
      std::string nonempty = fmt::format("\"{{\" {0} {1} {2} {0} \"}}\"", ws_, kv, more);
      return min == 0 ? "(" + nonempty + " | \"{\" " + ws_ + " \"}\")" : "(" + nonempty + ")";
    }
    std::vector<std::string> kvs;
    std::vector<bool> is_required;
    size_t index = 0;
    for (auto it = properties.begin(); it != properties.end(); ++it, ++index) {
      std::string value = convert(it.value(), fmt::format("{}_prop_{}", name, index),
                                  pointer + "/properties/" + it.key());
      kvs.push_back(literal(Json(it.key()).dump(-1, ' ', false)) + " " + ws_ + " \":\" " + ws_ + " " + value);
      is_required.push_back(required.count(it.key()) > 0);
    }
    std::string more_additional;
    if (!additional.empty()) {
      std::string kv = "basic_string " + ws_ + " \":\" " + ws_ + " " + additional;
      more_additional = add_rule(name + "_additional", "(" + sep() + " " + kv + ")*");
    }
    // part[i]: what may follow once property i is written (later properties up to the next
    // required one, or the end when none is required after i).
    size_t n = kvs.size();
    std::vector<std::string> part(n);
    for (size_t i = n; i-- > 0;) {
      std::vector<std::string> alternatives;
      bool required_ahead = false;
      for (size_t j = i + 1; j < n && !required_ahead; ++j) {
        alternatives.push_back(sep() + " " + kvs[j] + " " + part[j]);
        required_ahead = is_required[j];
      }
      if (!required_ahead) alternatives.push_back(more_additional.empty() ? "\"\"" : more_additional);
      std::string body;
      for (const std::string& a : alternatives) body += (body.empty() ? "(" : " | ") + a;
      part[i] = add_rule(fmt::format("{}_part_{}", name, i), body + ")");
    }
    std::vector<std::string> first;
    bool required_seen = false;
    for (size_t j = 0; j < n && !required_seen; ++j) {
      first.push_back(kvs[j] + " " + part[j]);
      required_seen = is_required[j];
    }
    if (!required_seen) {
      if (!additional.empty()) {
        first.push_back("basic_string " + ws_ + " \":\" " + ws_ + " " + additional + " " + more_additional);
      }
      first.push_back("\"\"");
    }
    std::string body;
    for (const std::string& a : first) body += (body.empty() ? "(" : " | ") + a;
    return "(\"{\" " + ws_ + " " + body + ") " + ws_ + " \"}\")";
  }

  // A key matching one of the patterns, then its value.
  std::string pattern_properties(const Json& patterns, const std::string& name, const std::string& pointer) {
    if (!patterns.is_object() || patterns.empty()) fail(pointer + "/patternProperties", "must be a non-empty object");
    std::string out;
    size_t index = 0;
    for (auto it = patterns.begin(); it != patterns.end(); ++it, ++index) {
      std::string key = add_regex_rule(fmt::format("{}_key_{}", name, index), it.key());
      std::string value = convert(it.value(), fmt::format("{}_value_{}", name, index),
                                  pointer + "/patternProperties/" + it.key());
      out += (out.empty() ? "(" : " | ") + fmt::format("\"\\\"\" {0} \"\\\"\" {1} \":\" {1} {2}", key, ws_, value);
    }
    return out + ")";
  }

  std::string convert_array(const Json& schema, const std::string& name, const std::string& pointer) {
    auto min_items = get_int(schema, "minItems", pointer).value_or(0);
    auto max_items = get_int(schema, "maxItems", pointer).value_or(-1);
    if (min_items < 0 || (max_items != -1 && max_items < min_items)) fail(pointer, "minItems/maxItems form an empty range");
    std::vector<std::string> prefix;
    if (schema.contains("prefixItems")) {
      const Json& p = schema["prefixItems"];
      if (!p.is_array()) fail(pointer + "/prefixItems", "must be an array");
      for (size_t i = 0; i < p.size(); ++i) {
        prefix.push_back(convert(p[i], fmt::format("{}_prefix_{}", name, i), fmt::format("{}/prefixItems/{}", pointer, i)));
      }
    }
    std::string items;  // "" when no items beyond the prefix are allowed
    if (schema.contains("items")) {
      const Json& it = schema["items"];
      if (!(it.is_boolean() && !it.get<bool>())) items = convert(it, name + "_item", pointer + "/items");
    } else if (prefix.empty() || !strict_) {
      items = "basic_any";
    }
    if (prefix.empty() && items == "basic_any" && min_items == 0 && max_items == -1) return "basic_array";
    int64_t k = int64_t(prefix.size());
    if (items.empty()) max_items = max_items == -1 ? k : std::min(max_items, k);
    if (min_items > max_items && max_items != -1) fail(pointer, "minItems exceeds the items allowed");
    auto repeat = [](int64_t lo, int64_t hi) {
      return fmt::format("{{{},{}}}", lo, hi == -1 ? std::string() : std::to_string(hi));
    };
    if (k == 0) {
      std::string more = "(" + sep() + " " + items + ")";
      std::string nonempty = fmt::format("\"[\" {0} {1} {2}{3} {0} \"]\"", ws_, items, more,
                                         repeat(std::max<int64_t>(min_items - 1, 0), max_items == -1 ? -1 : max_items - 1));
      if (max_items == 0) return "(\"[\" " + ws_ + " \"]\")";
      return min_items == 0 ? "(" + nonempty + " | \"[\" " + ws_ + " \"]\")" : "(" + nonempty + ")";
    }
    // suffix[i]: items i.. once i items are written.
    std::string tail = "\"\"";
    if (max_items == -1 || max_items > k) {
      tail = "(" + sep() + " " + items + ")" +
             repeat(std::max<int64_t>(min_items - k, 0), max_items == -1 ? -1 : max_items - k);
    }
    std::string next = tail;
    for (int64_t i = k - 1; i >= 0; --i) {
      if (i >= max_items && max_items != -1) continue;
      std::string item = (i == 0 ? "" : sep() + " ") + prefix[i] + " " + next;
      std::string body = i >= min_items ? "(\"\" | " + item + ")" : "(" + item + ")";
      next = add_rule(fmt::format("{}_suffix_{}", name, i), body);
    }
    return "(\"[\" " + ws_ + " " + next + " " + ws_ + " \"]\")";
  }

  const Json& root_;
  std::string ws_;
  bool strict_;
  std::vector<std::string> rules_;
  std::map<std::string, std::string> ref_rules_;
  std::set<std::string> used_names_{"root"};
  struct Pattern {
    std::string rule;
    std::string regex;
    bool quoted;  // the rule is a JSON string: the regex between quotes
  };
  std::vector<Pattern> patterns_;
};

Json parse_schema(std::string_view schema) {
  try {
    return Json::parse(schema);
  } catch (const nlohmann::json::parse_error& e) {
    throw_error(ErrorCode::kInvalidArgument, "json schema: not valid JSON: {}", e.what());
  }
}

}  // namespace

std::string json_schema_to_ebnf(std::string_view schema, const JsonSchemaOptions& options) {
  Json root = parse_schema(schema);
  return SchemaConverter(root, options).run();
}

Grammar json_schema_to_grammar(std::string_view schema, const JsonSchemaOptions& options) {
  Json root = parse_schema(schema);
  SchemaConverter converter(root, options);
  std::string text = converter.run();
  Grammar grammar = parse_ebnf(text);
  for (const auto& pattern : converter.patterns()) {
    int32_t rule = grammar.find_rule(pattern.rule);
    int32_t body = add_regex(grammar, pattern.regex, pattern.rule);
    if (pattern.quoted) body = grammar.sequence({grammar.bytes("\""), body, grammar.bytes("\"")});
    grammar.rules[rule].body = body;
  }
  return grammar;
}

}  // namespace brisk::grammar
