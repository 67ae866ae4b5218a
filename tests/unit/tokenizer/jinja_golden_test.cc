// Renders every shared Hugging Face chat template for every conversation of
// tests/data/chat_templates/conversations.json and compares with what Python jinja2 produced
// under transformers' settings (tools/make_chat_template_goldens.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/status.h"
#include "test_util.h"
#include "tokenizer/chat_template.h"

namespace brisk {
namespace {

using nlohmann::ordered_json;

std::filesystem::path goldens_dir() { return testing::test_data_dir() / "chat_templates"; }

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(goldens_dir(), ec)) {
    std::string stem = entry.path().stem().string();
    if (entry.path().extension() == ".json" && stem != "conversations" &&
        stem != "snippets") names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

ChatTemplateRenderOptions options_from(const ordered_json& meta) {
  const ordered_json& now = meta.at("now");
  std::tm tm{};
  tm.tm_year = now[0].get<int>() - 1900;
  tm.tm_mon = now[1].get<int>() - 1;
  tm.tm_mday = now[2].get<int>();
  tm.tm_hour = now[3].get<int>();
  tm.tm_min = now[4].get<int>();
  tm.tm_sec = now[5].get<int>();
  tm.tm_isdst = -1;
  std::mktime(&tm);  // fills tm_wday/tm_yday for %a, %A, %j
  ChatTemplateRenderOptions options;
  options.now = tm;
  return options;
}

ordered_json context_from(const ordered_json& meta, const ordered_json& conversation) {
  ChatTemplateInputs inputs;
  inputs.bos_token = meta.at("bos_token").get<std::string>();
  inputs.eos_token = meta.at("eos_token").get<std::string>();
  for (const auto& [key, value] : conversation.items()) {
    if (key == "messages") inputs.messages = value;
    else if (key == "tools") inputs.tools = value;
    else if (key == "documents") inputs.documents = value;
    else if (key == "add_generation_prompt") inputs.add_generation_prompt = value.get<bool>();
    else inputs.extra[key] = value;
  }
  return make_chat_template_context(inputs);
}

class ChatTemplateGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateGolden, MatchesPythonJinja2) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  const std::string name = GetParam();
  ordered_json meta = ordered_json::parse(testing::read_file(goldens_dir() / "conversations.json"));
  ordered_json golden = ordered_json::parse(testing::read_file(goldens_dir() / (name + ".json")));
  auto template_path = testing::shared_testdata_dir() / "chat-templates" /
                       golden.at("template").get<std::string>();
  ASSERT_TRUE(std::filesystem::exists(template_path)) << template_path;
  ChatTemplate tmpl = ChatTemplate::parse(testing::read_file(template_path), name);
  ChatTemplateRenderOptions options = options_from(meta);

  for (const auto& [case_name, expected] : golden.at("cases").items()) {
    SCOPED_TRACE("conversation " + case_name);
    ordered_json context = context_from(meta, meta.at("conversations").at(case_name));
    if (expected.contains("output")) {
      std::string rendered;
      try {
        rendered = tmpl.render(context, options);
      } catch (const Error& e) {
        ADD_FAILURE() << "unexpected error: " << e.what();
        continue;
      }
      EXPECT_EQ(rendered, expected.at("output").get<std::string>());
    } else {
      try {
        std::string rendered = tmpl.render(context, options);
        ADD_FAILURE() << "expected an error (" << expected.at("error") << "), got: " << rendered;
      } catch (const Error& e) {
        // Messages of raise_exception must come through; jinja2's own errors are worded
        // like Python's, which our messages follow for the errors these templates hit.
        EXPECT_NE(std::string(e.what()).find(expected.at("error").get<std::string>()),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, ChatTemplateGolden, ::testing::ValuesIn(golden_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           for (char& c : id)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return id;
                         });

}  // namespace
}  // namespace brisk
