// Structured output as requests ask for it: the constraint a request puts on its output (a JSON
// schema, any JSON, a regex, a list of choices, an EBNF grammar), converted to a grammar at parse
// time so that an invalid schema, regex or grammar is a 400 naming the field. Pure: no tokenizer;
// the server compiles the grammar against the model's vocabulary (compiled_grammar_cache.h).
//
// Request fields, as vLLM's OpenAI server reads them (chat and completions):
//   response_format     {"type": "text"} | {"type": "json_object"} |
//                       {"type": "json_schema", "json_schema": {"name", "schema", "strict"?, ...}}
//   guided_json         a schema (object or JSON text)       guided_regex    a regex
//   guided_choice       a list of strings (exactly one)      guided_grammar  EBNF (GBNF / xgrammar)
//   structured_outputs  {"json" | "regex" | "choice" | "grammar" | "json_object": ...,
//                        "disable_any_whitespace"?, "disable_additional_properties"?}
// One constraint per request; structured_outputs' options also apply to response_format's schema.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema_converter.h"
#include "server/request_fields.h"

namespace brisk::server {

struct OutputConstraint {
  enum class Kind { kJsonSchema, kJsonObject, kRegex, kChoice, kGrammar };
  Kind kind = Kind::kJsonObject;
  std::string param;  // the request field it came from
  // The kind and the constraint's canonical text: requests with equal keys share one compiled
  // grammar (and its token-mask cache).
  std::string key;
  std::shared_ptr<const grammar::Grammar> grammar;
};

// Each throws ApiError naming `param` when the input does not convert, with the converter's
// message (it names the JSON pointer, or the position in the regex or grammar).
OutputConstraint json_schema_constraint(const nlohmann::ordered_json& schema, const std::string& param,
                                        const grammar::JsonSchemaOptions& options = {});
OutputConstraint json_object_constraint(const std::string& param);
OutputConstraint regex_constraint(const std::string& regex, const std::string& param);
OutputConstraint choice_constraint(const std::vector<std::string>& choices, const std::string& param);
OutputConstraint grammar_constraint(const std::string& ebnf, const std::string& param);

// The constraint of a chat or completions request body: response_format, guided_* and
// structured_outputs. nullopt when there is none; ApiError (400) when there are several or one is
// malformed.
std::optional<OutputConstraint> read_output_constraint(const Fields& f);

// Responses API `text.format`: {"type": "text"} (nullopt), {"type": "json_object"} or
// {"type": "json_schema", "name", "schema", "strict"?, "description"?}.
std::optional<OutputConstraint> read_text_format(const nlohmann::ordered_json& format);

// 400 when a request has two constraints (e.g. response_format and a forced tool choice):
// `first`, and the field `second_param`.
void check_single_constraint(const std::optional<OutputConstraint>& first, const std::string& second_param);

}  // namespace brisk::server
