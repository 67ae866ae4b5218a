// Regular expressions for the JSON-schema string formats xgrammar supports (the same
// languages as xgrammar's, which follow the RFCs the formats name).
#pragma once

#include <string_view>

namespace brisk::grammar {

// Null for a format without a regex (the string is then unconstrained).
const char* json_format_regex(std::string_view format);

}  // namespace brisk::grammar
