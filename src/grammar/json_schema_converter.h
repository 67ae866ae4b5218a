// JSON schema -> Grammar, following xgrammar's json_schema_to_ebnf (the reference for the
// golden tests) with its defaults as vLLM uses them: any whitespace between tokens
// (`[ \n\t]*`), strict mode (no properties beyond `properties` unless additionalProperties
// says otherwise). Supported: type (and type arrays), properties, required,
// additionalProperties, enum, const, items, prefixItems, minItems, maxItems, anyOf, oneOf
// (as anyOf), allOf (merged when simple), $ref/$defs/definitions (recursion too), string
// minLength/maxLength/pattern/format, integer and number bounds (integer-valued bounds for
// numbers). Unsupported or invalid
// schemas throw kInvalidArgument / kUnsupported naming the keyword and its JSON pointer.
#pragma once

#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace brisk::grammar {

struct JsonSchemaOptions {
  bool any_whitespace = true;  // false: compact separators
  bool strict_mode = true;     // additionalProperties defaults to false
};

Grammar json_schema_to_grammar(std::string_view schema, const JsonSchemaOptions& options = {});
// The EBNF text json_schema_to_grammar parses (for debugging and docs).
std::string json_schema_to_ebnf(std::string_view schema, const JsonSchemaOptions& options = {});

// Any JSON value whose top level is an object or array (xgrammar's builtin JSON grammar,
// used for response_format json_object).
Grammar builtin_json_grammar();

}  // namespace brisk::grammar
