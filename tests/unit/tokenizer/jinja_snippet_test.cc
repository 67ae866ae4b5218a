// Small templates, one construct each, rendered by Python jinja2 with transformers' settings
// (tests/data/chat_templates/snippets.json, made by tools/make_chat_template_goldens.py).
#include <gtest/gtest.h>

#include <ctime>

#include <nlohmann/json.hpp>

#include "brisk/status.h"
#include "test_util.h"
#include "tokenizer/chat_template.h"

namespace brisk {
namespace {

using nlohmann::ordered_json;

TEST(JinjaSnippets, MatchPythonJinja2) {
  ordered_json golden = ordered_json::parse(
      testing::read_file(testing::test_data_dir() / "chat_templates" / "snippets.json"));
  // The generator pins strftime_now to 2024-09-05 14:30:00 (a Thursday).
  std::tm now{};
  now.tm_year = 124;
  now.tm_mon = 8;
  now.tm_mday = 5;
  now.tm_hour = 14;
  now.tm_min = 30;
  now.tm_isdst = -1;
  std::mktime(&now);
  ChatTemplateRenderOptions options;
  options.now = now;
  const ordered_json& variables = golden.at("variables");
  int num_cases = 0;
  for (const ordered_json& c : golden.at("cases")) {
    const std::string source = c.at("template").get<std::string>();
    SCOPED_TRACE("template: " + source);
    ++num_cases;
    std::string rendered;
    try {
      rendered = ChatTemplate::parse(source, "snippet").render(variables, options);
    } catch (const Error& e) {
      if (c.contains("output")) {
        ADD_FAILURE() << "unexpected error: " << e.what();
      } else if (c.at("error_type") != "TemplateSyntaxError" &&
                 c.at("error_type") != "TemplateAssertionError") {
        // Runtime errors are worded like Python's; syntax errors have our own wording with
        // line and column (jinja_error_test.cc checks those).
        EXPECT_NE(std::string(e.what()).find(c.at("error").get<std::string>()), std::string::npos)
            << e.what();
      }
      continue;
    }
    if (c.contains("output")) {
      EXPECT_EQ(rendered, c.at("output").get<std::string>());
    } else {
      ADD_FAILURE() << "expected " << c.at("error_type") << " (" << c.at("error")
                    << "), rendered: " << rendered;
    }
  }
  EXPECT_GT(num_cases, 50);
}

}  // namespace
}  // namespace brisk
