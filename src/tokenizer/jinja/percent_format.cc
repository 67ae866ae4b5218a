#include "tokenizer/jinja/percent_format.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

std::string pad(std::string text, size_t width, bool left_align, char fill) {
  size_t length = utf8_length(text);
  if (length >= width) return text;
  std::string padding(width - length, fill);
  if (left_align) return text + std::string(width - length, ' ');
  // Zero padding goes after the sign, as in Python.
  if (fill == '0' && !text.empty() && (text[0] == '-' || text[0] == '+' || text[0] == ' '))
    return text.substr(0, 1) + padding + text.substr(1);
  return padding + text;
}

}  // namespace

std::string percent_format(Interpreter& interp, const std::string& format, const Value& args) {
  std::string out;
  size_t next_arg = 0;
  const bool is_tuple = args.is_tuple();
  auto take = [&]() -> Value {
    if (!is_tuple) {
      if (next_arg++ > 0) interp.fail("not enough arguments for format string");
      return args;
    }
    if (next_arg >= args.as_list().size()) interp.fail("not enough arguments for format string");
    return args.as_list()[next_arg++];
  };
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) interp.fail("incomplete format");
    Value value;
    bool has_value = false;
    if (format[i] == '(') {
      size_t close = format.find(')', i);
      if (close == std::string::npos) interp.fail("incomplete format key");
      if (!args.is_dict()) interp.fail("format requires a mapping");
      const Value* v = args.as_dict().find(format.substr(i + 1, close - i - 1));
      if (!v) interp.fail(fmt::format("KeyError: '{}'", format.substr(i + 1, close - i - 1)));
      value = *v;
      has_value = true;
      i = close + 1;
    }
    bool left = false, plus = false, space = false, zero = false, alt = false;
    for (; i < format.size(); ++i) {
      char f = format[i];
      if (f == '-') left = true;
      else if (f == '+') plus = true;
      else if (f == ' ') space = true;
      else if (f == '0') zero = true;
      else if (f == '#') alt = true;
      else break;
    }
    size_t width = 0;
    if (i < format.size() && format[i] == '*') {
      width = static_cast<size_t>(take().as_int());
      ++i;
    }
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])))
      width = width * 10 + static_cast<size_t>(format[i++] - '0');
    int precision = -1;
    if (i < format.size() && format[i] == '.') {
      precision = 0;
      ++i;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])))
        precision = precision * 10 + (format[i++] - '0');
    }
    if (i >= format.size()) interp.fail("incomplete format");
    char conv = format[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!has_value) value = take();
    std::string text;
    switch (conv) {
      case 's': case 'r': case 'a':
        text = conv == 's' ? value.to_str() : value.repr();
        if (precision >= 0) text = utf8_encode(utf8_decode(text).substr(0, static_cast<size_t>(precision)));
        break;
      case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
        interp.check_defined(value);
        if (!value.is_number())
          interp.fail(fmt::format("%{} format: a real number is required, not {}", conv, value.type_name()));
        int64_t n = value.is_float() ? static_cast<int64_t>(value.as_double()) : value.as_int();
        if (conv == 'c') {
          utf8_append(text, static_cast<char32_t>(n));
          break;
        }
        uint64_t magnitude = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
        std::string digits = conv == 'x'   ? fmt::format("{:x}", magnitude)
                             : conv == 'X' ? fmt::format("{:X}", magnitude)
                             : conv == 'o' ? fmt::format("{:o}", magnitude)
                                           : std::to_string(magnitude);
        if (alt && conv != 'd' && conv != 'i' && conv != 'u')
          digits = (conv == 'o' ? "0o" : conv == 'x' ? "0x" : "0X") + digits;
        text = (n < 0 ? "-" : plus ? "+" : space ? " " : "") + digits;
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
        interp.check_defined(value);
        if (!value.is_number())
          interp.fail(fmt::format("%{} format: a real number is required, not {}", conv, value.type_name()));
        std::string spec = std::string("%") + (plus ? "+" : "") + (space ? " " : "") + (alt ? "#" : "") +
                           "." + std::to_string(precision < 0 ? 6 : precision) + conv;
        char buf[512];
        std::snprintf(buf, sizeof(buf), spec.c_str(), value.as_double());
        text = buf;
        break;
      }
      default:
        interp.fail(fmt::format("unsupported format character '{}'", conv));
    }
    bool numeric = conv != 's' && conv != 'r' && conv != 'a' && conv != 'c';
    out += pad(std::move(text), width, left, zero && numeric && !left ? '0' : ' ');
  }
  if (is_tuple && next_arg < args.as_list().size())
    interp.fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace brisk::jinja
