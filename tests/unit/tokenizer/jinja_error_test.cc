// Bad templates fail at parse time with the template name, line and column; runtime errors
// name the line of the failing expression.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "brisk/status.h"
#include "tokenizer/chat_template.h"

namespace brisk {
namespace {

std::string parse_error(const std::string& source) {
  try {
    ChatTemplate::parse(source, "tpl");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "expected a parse error for: " << source;
  return "";
}

std::string render_error(const std::string& source) {
  auto t = ChatTemplate::parse(source, "tpl");
  try {
    t.render(nlohmann::ordered_json::object());
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a render error for: " << source;
  return "";
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("{% if x %}\nabc"), "tpl:2:4: missing '{% endif %}' for 'if' opened at line 1");
  EXPECT_EQ(parse_error("a\n{% for x in y %}{% endif %}"),
            "tpl:2:20: unexpected 'endif' (no open block it could close)");
  EXPECT_EQ(parse_error("{{ 1 + }}"), "tpl:1:8: expected an expression, got '}}'");
  EXPECT_EQ(parse_error("x\n\n  {{ 'abc }}"), "tpl:3:6: unterminated string literal");
  EXPECT_EQ(parse_error("{# open"), "tpl:1:1: unterminated comment (missing '#}')");
  EXPECT_EQ(parse_error("{{ x"), "tpl:1:1: unterminated expression (missing '}}')");
  EXPECT_EQ(parse_error("{{ f(a=1, 2) }}"), "tpl:1:11: positional argument follows keyword argument");
}

TEST(JinjaErrors, UnknownFiltersAndTestsFailAtParseTime) {
  // Like jinja2, even in a branch that never runs.
  EXPECT_EQ(parse_error("{% if false %}{{ x | nosuch }}{% endif %}"), "tpl:1:22: no filter named 'nosuch'");
  EXPECT_EQ(parse_error("line1\n  {{ x is nosuch }}"), "tpl:2:8: no test named 'nosuch'");
}

TEST(JinjaErrors, UnsupportedConstructsFailAtParseTime) {
  EXPECT_EQ(parse_error("{% include 'x' %}"), "tpl:1:4: unsupported tag 'include'");
  EXPECT_EQ(parse_error("{% extends 'x' %}"), "tpl:1:4: unsupported tag 'extends'");
  EXPECT_EQ(parse_error("{% for x in y recursive %}{% endfor %}"),
            "tpl:1:15: recursive for loops are not supported");
  EXPECT_EQ(parse_error("{% break %}"), "tpl:1:4: 'break' outside of a for loop");
  EXPECT_EQ(parse_error("{% frobnicate %}"), "tpl:1:4: unknown tag 'frobnicate'");
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(render_error("a\n{{ 1 + 'x' }}"),
            "tpl:2:6: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(render_error("a\n\n{% for x in none %}{% endfor %}"),
            "tpl:3:13: 'NoneType' object is not iterable");
  EXPECT_EQ(render_error("{{ foo.bar }}"), "tpl:1:7: 'foo' is undefined");
  EXPECT_EQ(render_error("{{ {'a': 1}.b.c }}"), "tpl:1:14: 'dict object' has no attribute 'b'");
  EXPECT_EQ(render_error("x\n{{ raise_exception('bad roles') }}"), "tpl:2:19: raise_exception: bad roles");
}

TEST(JinjaErrors, SandboxRefusesMutationAndRunawayRecursion) {
  EXPECT_NE(render_error("{{ [1].append(2) }}").find("access to attribute 'append' of 'list' object is unsafe"),
            std::string::npos);
  EXPECT_NE(render_error("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}").find("recursed deeper"),
            std::string::npos);
}

}  // namespace
}  // namespace brisk
