#include "grammar/regex_converter.h"

#include "core/error.h"

namespace brisk::grammar {

Grammar regex_to_grammar(std::string_view) { throw_error(ErrorCode::kUnsupported, "regex: todo"); }
int32_t add_regex(Grammar&, std::string_view, std::string_view) { throw_error(ErrorCode::kUnsupported, "regex: todo"); }

}  // namespace brisk::grammar
