// Hand-written checks of the Jinja2 interpreter: whitespace control, each construct, Python
// value printing, the ChatTemplate API. (jinja_snippet_test.cc checks many more constructs
// against Python jinja2 output.)
#include <gtest/gtest.h>

#include <rapidcheck/gtest.h>

#include <cmath>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/status.h"
#include "test_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja/py_string.h"
#include "tokenizer/jinja/value.h"

namespace brisk {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& source, const ordered_json& context = ordered_json::object()) {
  return ChatTemplate::parse(source, "test").render(context);
}

TEST(JinjaWhitespace, TrimBlocksRemovesTheNewlineAfterABlockTag) {
  EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  // ...but not after an expression.
  EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
  // Only one newline goes.
  EXPECT_EQ(render("{% if true %}\n\nx{% endif %}"), "\nx");
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentationBeforeATag) {
  EXPECT_EQ(render("a\n    {% if true %}\n    x\n    {% endif %}\nb"), "a\n    x\nb");
  // Not when other text precedes the tag on its line, and never before `{{`.
  EXPECT_EQ(render("a  {% if true %}x{% endif %}"), "a  x");
  EXPECT_EQ(render("a\n  {{ 'x' }}"), "a\n  x");
  // Comments are stripped the same way.
  EXPECT_EQ(render("a\n  {# note #}\nb"), "a\nb");
}

TEST(JinjaWhitespace, MinusStripsAllAdjacentWhitespace) {
  EXPECT_EQ(render("a  \n {%- if true -%} \n x \n {%- endif -%}\n\n b"), "axb");
  EXPECT_EQ(render("a \n {{- 'x' -}} \n b"), "axb");
  EXPECT_EQ(render("a \n {#- c -#} \n b"), "ab");
}

TEST(JinjaWhitespace, PlusDisablesLstripAndTrim) {
  EXPECT_EQ(render("  {%+ if true %}x{% endif +%}\ny"), "  x\ny");
}

TEST(JinjaWhitespace, OneTrailingNewlineOfTheSourceIsDropped) {
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(JinjaWhitespace, RawBlocksAreLiteral) {
  EXPECT_EQ(render("{% raw %}{{ x }} {% if %}{% endraw %}"), "{{ x }} {% if %}");
  EXPECT_EQ(render("{%- raw -%}  {{ x }}  {%- endraw %}"), "{{ x }}");
}

TEST(JinjaConstructs, ForLoopVariables) {
  ordered_json ctx = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}", ctx),
            "103TrueFalse3 212FalseFalse3 321FalseTrue3 ");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}", ctx),
            "<a>b;a<b>c;b<c>;");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ x }}{{ loop.length }}{% endfor %}", ctx), "a2c2");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}{{ v }}{% endfor %}"), "a1b2");
}

TEST(JinjaConstructs, LoopControls) {
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}"
                   "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "023");
}

TEST(JinjaConstructs, SetNamespaceAndScoping) {
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
                   "{% endfor %}{{ ns.n }}"),
            "6");
  // A plain set inside a loop does not leak out of the iteration.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{% set x = 5 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set x %}a{{ 1 + 1 }}{% endset %}{{ x }}"), "a2");
}

TEST(JinjaConstructs, Macros) {
  EXPECT_EQ(render("{% macro m(a, b='d') %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, b=2) }}"),
            "1-d 1-2");
  EXPECT_EQ(render("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}"),
            "[in]");
}

TEST(JinjaConstructs, GenerationBlockRendersItsBody) {
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

TEST(JinjaValues, PrintsLikePython) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.0, {'k': (1,)}] }}"), "[1, 'a', None, True, 1.0, {'k': (1,)}]");
  EXPECT_EQ(render("{{ 1.0 }} {{ 1e20 }} {{ 0.0001 }} {{ 1e-5 }} {{ 7 / 2 }} {{ 7 // 2 }}"),
            "1.0 1e+20 0.0001 1e-05 3.5 3");
  EXPECT_EQ(render("{{ \"it's\" | list }}"), "['i', 't', \"'\", 's']");
  EXPECT_EQ(render("{{ 'a\\n\\tb' }}"), "a\n\tb");
}

TEST(JinjaValues, UndefinedFollowsJinja2Defaults) {
  EXPECT_EQ(render("[{{ nope }}]{{ nope is defined }}{{ nope|length }}"), "[]False0");
  EXPECT_EQ(render("{% for x in nope %}x{% endfor %}ok"), "ok");
  EXPECT_EQ(render("{{ {'a': 1}.b is defined }}"), "False");
  EXPECT_THROW(render("{{ nope.attr }}"), Error);
  EXPECT_THROW(render("{{ nope + 1 }}"), Error);
}

TEST(JinjaFilters, TojsonMatchesTransformers) {
  // Keys keep insertion order, non-ASCII stays, and indent uses Python's separators.
  ordered_json ctx = {{"v", ordered_json::parse(R"({"z": "é", "a": [1, 2.5, null, true]})")}};
  EXPECT_EQ(render("{{ v|tojson }}", ctx), R"({"z": "é", "a": [1, 2.5, null, true]})");
  EXPECT_EQ(render("{{ v|tojson(indent=2) }}", ctx),
            "{\n  \"z\": \"é\",\n  \"a\": [\n    1,\n    2.5,\n    null,\n    true\n  ]\n}");
}

TEST(ChatTemplateApi, RaiseExceptionCarriesTheTemplateMessage) {
  try {
    render("line one\n{{ raise_exception('roles must alternate') }}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("roles must alternate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test:2:"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateApi, StrftimeNowUsesTheFixedTimeWhenGiven) {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_isdst = -1;
  std::mktime(&tm);
  ChatTemplateRenderOptions options;
  options.now = tm;
  auto t = ChatTemplate::parse("{{ strftime_now('%d %b %Y') }}");
  EXPECT_EQ(t.render(ordered_json::object(), options), "26 Jul 2024");
  // Without a fixed time it formats the clock: at least the year has four digits.
  EXPECT_EQ(t.render(ordered_json::object()).size(), 11u);
}

TEST(ChatTemplateApi, BuildsTheTransformersContext) {
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  inputs.add_generation_prompt = true;
  inputs.bos_token = "<s>";
  inputs.extra["enable_thinking"] = false;
  ordered_json ctx = make_chat_template_context(inputs);
  EXPECT_TRUE(ctx.at("tools").is_null());
  EXPECT_TRUE(ctx.at("documents").is_null());
  auto t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"
      "{{ tools is none }}{{ add_generation_prompt }}{{ enable_thinking }}");
  EXPECT_EQ(t.render(ctx), "<s>user:hiTrueTrueFalse");
}

TEST(ChatTemplateApi, ReadsTokenizerConfig) {
  ordered_json config = ordered_json::parse(R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>",
    "pad_token": null, "additional_special_tokens": ["<x>"],
    "chat_template": [{"name": "default", "template": "D{{ bos_token }}"},
                      {"name": "tool_use", "template": "T{{ eos_token }}"}]})");
  ordered_json tokens = special_tokens_from_tokenizer_config(config);
  EXPECT_EQ(tokens, ordered_json::parse(
                        R"({"bos_token": "<s>", "eos_token": "</s>", "additional_special_tokens": ["<x>"]})"));
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(config).render(tokens), "D<s>");
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(config, "tool_use").render(tokens), "T</s>");
  try {
    ChatTemplate::from_tokenizer_config(config, "rag");
    FAIL() << "expected kNotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("default, tool_use"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChatTemplate::from_tokenizer_config(ordered_json::object()), Error);
}

TEST(ChatTemplateApi, RendersThePhi3TokenizerConfigTemplate) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  ordered_json config = ordered_json::parse(testing::read_file(
      testing::shared_testdata_dir() / "tokenizers" / "phi3" / "tokenizer_config.json"));
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  inputs.extra = special_tokens_from_tokenizer_config(config);
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(config).render(make_chat_template_context(inputs)),
            "<|user|>\nHi<|end|>\n<|endoftext|>");
}

TEST(ChatTemplateApi, PlainJsonContextWorks) {
  nlohmann::json ctx = {{"name", "x"}};
  EXPECT_EQ(ChatTemplate::parse("{{ name }}").render(ctx), "x");
  EXPECT_THROW(ChatTemplate::parse("{{ x }}").render(ordered_json::array()), Error);
}

TEST(ChatTemplateApi, RendersConcurrently) {
  auto t = ChatTemplate::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.content }}{% endfor %}{{ ns.n }}");
  ordered_json ctx = {{"messages", ordered_json::parse(R"([{"content": "a"}, {"content": "b"}])")}};
  std::vector<std::thread> threads;
  std::vector<std::string> results(4);
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      for (int j = 0; j < 200; ++j) results[i] = t.render(ctx);
    });
  for (auto& th : threads) th.join();
  for (const auto& r : results) EXPECT_EQ(r, "ab2");
}

RC_GTEST_PROP(JinjaProperties, TextWithoutTagsRendersVerbatim, (const std::string& raw)) {
  // Drop '{' so no tag can start, and '\r' which jinja2 normalizes to '\n'.
  std::string text;
  for (char c : raw)
    if (c != '{' && c != '\r') text += c;
  std::string expected = text;
  if (!expected.empty() && expected.back() == '\n') expected.pop_back();
  RC_ASSERT(render(text) == expected);
}

RC_GTEST_PROP(JinjaProperties, StringLiteralsRoundTrip, (const std::string& raw)) {
  // Any printable ASCII string survives being written as an escaped literal and printed.
  std::string text, literal = "'";
  for (char c : raw) {
    if (c < 0x20 || c > 0x7E) continue;
    text += c;
    if (c == '\'' || c == '\\') literal += '\\';
    literal += c;
  }
  literal += "'";
  RC_ASSERT(render("{{ " + literal + " }}") == text);
}

RC_GTEST_PROP(JinjaProperties, FloatReprRoundTrips, (double value)) {
  RC_PRE(std::isfinite(value));
  std::string text = jinja::format_python_float(value);
  RC_ASSERT(std::strtod(text.c_str(), nullptr) == value);
}

RC_GTEST_PROP(JinjaProperties, SplitThenJoinIsIdentity, (const std::string& text)) {
  std::vector<std::string> parts = jinja::py_split(text, std::string(","), -1);
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) joined += (i ? "," : "") + parts[i];
  RC_ASSERT(joined == text);
}

}  // namespace
}  // namespace brisk
