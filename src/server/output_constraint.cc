#include "server/output_constraint.h"

#include <functional>

#include "brisk/status.h"
#include "core/json_util.h"
#include "grammar/byte_grammar.h"
#include "grammar/ebnf_parser.h"
#include "grammar/regex_converter.h"
#include "server/api_error.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

// A constraint field found in the request, converted only once it is known to be the only one.
struct Candidate {
  std::string param;
  std::function<OutputConstraint(const grammar::JsonSchemaOptions&)> build;
};

// Lowering a grammar (when it is compiled) copies repetitions: a short schema or regex
// (maxLength: 10000000, x{0,100000}{0,100000}) could hold a server thread and its memory for
// minutes. Lowering takes time in proportion to what it makes: 200000 rules and 500000 elements
// ((ab|c){0,100000}) lower in 0.1 s on the development machine.
constexpr int64_t kMaxLoweredRules = 200000;
constexpr int64_t kMaxLoweredElements = 1000000;

OutputConstraint make(OutputConstraint::Kind kind, std::string param, std::string key, grammar::Grammar g) {
  const grammar::LoweredSize size = grammar::ByteGrammar::lowered_size(g);
  if (size.rules > kMaxLoweredRules || size.elements > kMaxLoweredElements)
    throw_invalid(param, "'{}' makes a grammar too large to follow: {} rules and {} elements once repetitions are "
                  "expanded, where brisk takes at most {} and {} (lower repetition counts such as maxLength, "
                  "maxItems or x{{m,n}})", param, size.rules, size.elements, kMaxLoweredRules, kMaxLoweredElements);
  return {kind, std::move(param), std::move(key), std::make_shared<const grammar::Grammar>(std::move(g))};
}

// A schema given as an object, or as its JSON text (guided_json, structured_outputs.json).
Json read_schema(const Json& value, const std::string& param) {
  if (value.is_object() || value.is_boolean()) return value;
  if (!value.is_string())
    throw_invalid(param, "'{}' must be a JSON schema (an object, or its JSON text), got {}", param,
                  describe_json(value));
  return parse_json_field(value.get<std::string>(), param);
}

std::string read_string(const Json& value, const std::string& param, const char* what) {
  if (!value.is_string()) throw_invalid(param, "'{}' must be {}, got {}", param, what, describe_json(value));
  return value.get<std::string>();
}

std::vector<std::string> read_choices(const Json& value, const std::string& param) {
  if (!value.is_array() || value.empty())
    throw_invalid(param, "'{}' must be a non-empty list of strings, got {}", param, describe_json(value));
  std::vector<std::string> choices;
  for (const Json& item : value) {
    if (!item.is_string()) throw_invalid(param, "'{}' must hold strings, got an item {}", param, describe_json(item));
    choices.push_back(item.get<std::string>());
  }
  return choices;
}

// The schema of a json_schema format: `where` holds name, schema, strict, description (chat's
// response_format.json_schema, or the Responses API's text.format itself).
Json read_json_schema_format(const Fields& where) {
  std::optional<std::string> name = where.string("name");
  if (!name) throw_invalid(where.name("name"), "'{}' is required", where.name("name"));
  where.string("description");
  where.boolean("strict");  // brisk's schemas are always strict: no keys beyond `properties` by default
  const Json* schema = where.get("schema");
  if (!schema || !schema->is_object())
    throw_invalid(where.name("schema"), "'{}' (a JSON schema object) is required", where.name("schema"));
  return *schema;
}

void add_response_format(const Fields& f, std::vector<Candidate>& out) {
  const Json* format = f.get("response_format");
  if (!format) return;
  if (!format->is_object() || !format->contains("type") || !(*format)["type"].is_string())
    throw_invalid("response_format", "'response_format' must be an object like {{\"type\": \"json_object\"}}");
  const std::string type = (*format)["type"].get<std::string>();
  if (type == "text") return;
  if (type == "json_object") {
    out.push_back({"response_format", [](const auto&) { return json_object_constraint("response_format"); }});
    return;
  }
  if (type == "json_schema") {
    const Json* spec = Fields(*format, "response_format.").get("json_schema");
    if (!spec || !spec->is_object())
      throw_invalid("response_format.json_schema", "'response_format' of type json_schema needs 'json_schema': "
                    "{{\"name\": ..., \"schema\": {{...}}}}");
    Json schema = read_json_schema_format(Fields(*spec, "response_format.json_schema."));
    out.push_back({"response_format", [schema](const auto& options) {
                     return json_schema_constraint(schema, "response_format.json_schema.schema", options);
                   }});
    return;
  }
  throw_invalid("response_format.type", "'response_format.type' must be text, json_object or json_schema, got '{}'{}",
                type, type == "structural_tag" ? " (brisk has no structural tags)" : "");
}

// The constraint fields json, regex, choice and grammar: vLLM's guided_json ... (`key_prefix`
// "guided_") or the members of structured_outputs (`f` is that object).
void add_constraint_fields(const Fields& f, const std::string& key_prefix, std::vector<Candidate>& out) {
  std::string param;  // the field `field` found last
  auto field = [&](const char* key) {
    const std::string name = key_prefix + key;
    param = f.name(name.c_str());
    return f.get(name.c_str());
  };
  if (const Json* v = field("json")) {
    Json schema = read_schema(*v, param);
    out.push_back({param, [schema, param](const auto& options) {
                     return json_schema_constraint(schema, param, options);
                   }});
  }
  if (const Json* v = field("regex")) {
    std::string regex = read_string(*v, param, "a regular expression");
    out.push_back({param, [regex, param](const auto&) { return regex_constraint(regex, param); }});
  }
  if (const Json* v = field("choice")) {
    std::vector<std::string> choices = read_choices(*v, param);
    out.push_back({param, [choices, param](const auto&) { return choice_constraint(choices, param); }});
  }
  if (const Json* v = field("grammar")) {
    std::string ebnf = read_string(*v, param, "an EBNF grammar");
    out.push_back({param, [ebnf, param](const auto&) { return grammar_constraint(ebnf, param); }});
  }
}

}  // namespace

OutputConstraint json_schema_constraint(const Json& schema, const std::string& param,
                                        const grammar::JsonSchemaOptions& options) {
  const std::string text = schema.dump();
  try {
    return make(OutputConstraint::Kind::kJsonSchema, param,
                fmt::format("json{}:{}", options.any_whitespace ? "" : "(compact)", text),
                grammar::json_schema_to_grammar(text, options));
  } catch (const Error& e) {
    throw_invalid(param, "'{}' is not a JSON schema brisk can follow: {}", param, e.what());
  }
}

OutputConstraint json_object_constraint(const std::string& param) {
  return make(OutputConstraint::Kind::kJsonObject, param, "json_object", grammar::builtin_json_grammar());
}

OutputConstraint regex_constraint(const std::string& regex, const std::string& param) {
  try {
    return make(OutputConstraint::Kind::kRegex, param, "regex:" + regex, grammar::regex_to_grammar(regex));
  } catch (const Error& e) {
    throw_invalid(param, "'{}' is not a regular expression brisk can follow: {}", param, e.what());
  }
}

OutputConstraint choice_constraint(const std::vector<std::string>& choices, const std::string& param) {
  grammar::Grammar g;
  const int32_t root = g.rule_id("root");
  std::vector<int32_t> alternatives;
  for (const std::string& choice : choices) alternatives.push_back(g.bytes(choice));
  g.rules[root].body = g.choice(std::move(alternatives));
  g.root = root;
  return make(OutputConstraint::Kind::kChoice, param, "choice:" + Json(choices).dump(), std::move(g));
}

OutputConstraint grammar_constraint(const std::string& ebnf, const std::string& param) {
  try {
    return make(OutputConstraint::Kind::kGrammar, param, "grammar:" + ebnf, grammar::parse_ebnf(ebnf));
  } catch (const Error& e) {
    throw_invalid(param, "'{}' is not an EBNF grammar brisk can follow: {}", param, e.what());
  }
}

std::optional<OutputConstraint> read_output_constraint(const Fields& f) {
  f.reject("guided_whitespace_pattern", "brisk's JSON grammars allow any whitespace between tokens, or none with "
           "structured_outputs.disable_any_whitespace");
  std::vector<Candidate> candidates;
  add_response_format(f, candidates);
  add_constraint_fields(f, "guided_", candidates);
  grammar::JsonSchemaOptions options;
  if (const Json* so = f.get("structured_outputs")) {
    if (!so->is_object())
      throw_invalid("structured_outputs", "'structured_outputs' must be an object like {{\"json\": {{...}}}}");
    Fields s(*so, "structured_outputs.");
    add_constraint_fields(s, "", candidates);
    if (s.boolean("json_object").value_or(false))
      candidates.push_back({"structured_outputs.json_object",
                            [](const auto&) { return json_object_constraint("structured_outputs.json_object"); }});
    options.any_whitespace = !s.boolean("disable_any_whitespace").value_or(false);
    s.boolean("disable_additional_properties");  // always so: keys beyond `properties` need additionalProperties
    s.reject("whitespace_pattern", "brisk's JSON grammars allow any whitespace, or none with disable_any_whitespace");
    s.reject("structural_tag", "brisk has no structural tags");
    if (candidates.empty())
      throw_invalid("structured_outputs", "'structured_outputs' names no constraint: give one of json, regex, choice, "
                    "grammar or json_object");
  }
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() > 1)
    throw_invalid(candidates[1].param, "'{}' and '{}' both constrain the output: give only one", candidates[0].param,
                  candidates[1].param);
  // Errors in the constraint name its inner field (response_format.json_schema.schema); later ones
  // (a conflict, compiling it) the field that carried it.
  OutputConstraint constraint = candidates[0].build(options);
  constraint.param = candidates[0].param;
  return constraint;
}

std::optional<OutputConstraint> read_text_format(const Json& format) {
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
    throw_invalid("text.format", "'text.format' must be an object like {{\"type\": \"text\"}}");
  const std::string type = format["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") return json_object_constraint("text.format");
  if (type == "json_schema") {
    OutputConstraint constraint =
        json_schema_constraint(read_json_schema_format(Fields(format, "text.format.")), "text.format.schema");
    constraint.param = "text.format";
    return constraint;
  }
  throw_invalid("text.format.type", "'text.format.type' must be text, json_object or json_schema, got '{}'", type);
}

void check_single_constraint(const std::optional<OutputConstraint>& first, const std::string& second_param) {
  if (first)
    throw_invalid(second_param, "'{}' and '{}' both constrain the output: give only one", first->param, second_param);
}

}  // namespace brisk::server
