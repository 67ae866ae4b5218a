// Python's printf-style string formatting (`'%s: %.2f' % (name, x)` and the `format` filter).
#pragma once

#include <string>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/value.h"

namespace brisk::jinja {

// `args` is a tuple of values, a dict for %(name)s fields, or a single value. Supports the
// flags -+ #0, width, precision and the conversions s r a d i u f F e E g G x X o c %.
std::string percent_format(Interpreter& interp, const std::string& format, const Value& args);

}  // namespace brisk::jinja
