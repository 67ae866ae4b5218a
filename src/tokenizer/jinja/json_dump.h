// Python's json.dumps over jinja values, as transformers' `tojson` filter calls it:
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys).
// (jinja2's own tojson escapes <, >, & and ' for HTML; Hugging Face overrides it.)
#pragma once

#include <optional>
#include <string>

#include "tokenizer/jinja/value.h"

namespace brisk::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // absent: one line; "" still adds newlines (Python)
  std::optional<std::pair<std::string, std::string>> separators;  // (item, key)
  bool sort_keys = false;
};

// Throws Error(kInvalidArgument) naming the value type that JSON cannot represent
// (undefined, callables, namespaces, NaN is written as NaN like Python).
std::string json_dump(const Value& value, const JsonDumpOptions& options);

}  // namespace brisk::jinja
