#include "grammar/json_schema_converter.h"

#include "core/error.h"
#include "grammar/ebnf_parser.h"

namespace brisk::grammar {

std::string json_schema_to_ebnf(std::string_view, const JsonSchemaOptions&) { throw_error(ErrorCode::kUnsupported, "json: todo"); }
Grammar json_schema_to_grammar(std::string_view s, const JsonSchemaOptions& o) { return parse_ebnf(json_schema_to_ebnf(s, o)); }
Grammar builtin_json_grammar() { throw_error(ErrorCode::kUnsupported, "json: todo"); }

}  // namespace brisk::grammar
