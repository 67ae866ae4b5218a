// The bundled default model (models/tiny-austen, trained by tools/train_default_model.py) end to
// end on the CPU: brisk's tokenizer, chat template, engine and `brisk generate` against the
// Hugging Face transformers outputs the training script recorded from the saved folder
// (tests/data/default_model_golden.json: float32, eager, greedy).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "test_util.h"
#include "tokenizer/chat_prompt.h"
#include "tokenizer/tokenizer.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

// tests/data/../../models/tiny-austen: the repository's models/ folder.
fs::path model_dir() { return testing::test_data_dir().parent_path().parent_path() / "models" / "tiny-austen"; }

nlohmann::json golden() {
  return nlohmann::json::parse(testing::read_file(testing::test_data_dir() / "default_model_golden.json"));
}

std::vector<int32_t> ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

// The greedy tokens that are pinned: those before the first step whose top-1 margin in
// transformers was below the golden's min_margin (a near tie that summation order could flip).
std::vector<int32_t> pinned_ids(const nlohmann::json& entry) {
  auto all = ids(entry.at("greedy_ids"));
  return {all.begin(), all.begin() + entry.at("pinned").get<int64_t>()};
}

TEST(DefaultModel, FolderIsSmallAndComplete) {
  uint64_t total = 0;
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                           "tokenizer_config.json"}) {
    ASSERT_TRUE(fs::exists(model_dir() / name)) << name;
  }
  for (const auto& entry : fs::recursive_directory_iterator(model_dir()))
    if (entry.is_regular_file()) total += entry.file_size();
  EXPECT_LE(total, 30u << 20) << "the bundled model must stay small";
}

TEST(DefaultModel, TokenizerMatchesHuggingFace) {
  auto g = golden();
  auto tokenizer = Tokenizer::from_folder(model_dir());
  for (const auto& p : g.at("prompts")) {
    std::string prompt = p.at("prompt");
    EXPECT_EQ(tokenizer->encode(prompt, /*add_special_tokens=*/true), ids(p.at("prompt_ids"))) << prompt;
    EXPECT_EQ(tokenizer->decode(ids(p.at("greedy_ids")), /*skip_special_tokens=*/true), p.at("text").get<std::string>())
        << prompt;
  }
}

TEST(DefaultModel, ChatTemplateMatchesHuggingFace) {
  auto g = golden();
  auto tokenizer = Tokenizer::from_folder(model_dir());
  auto chat = ChatPrompt::from_folder(model_dir());
  for (const auto& c : g.at("chats")) {
    std::string rendered = chat.render(nlohmann::ordered_json(c.at("messages")), /*add_generation_prompt=*/true);
    EXPECT_EQ(rendered, c.at("rendered").get<std::string>());
    EXPECT_EQ(tokenizer->encode(rendered, /*add_special_tokens=*/false), ids(c.at("prompt_ids")));
  }
}

TEST(DefaultModel, GreedyTokensMatchTransformers) {
  auto g = golden();
  // The prompt `make run` and the README show: all of its greedy steps must be pinned.
  ASSERT_EQ(g.at("prompts")[g.at("make_run").get<size_t>()].at("pinned"), g.at("num_greedy"));
  EngineOptions options;
  options.model_dir = model_dir().string();
  options.num_kv_blocks = 64;
  auto engine = Engine::create(options);
  auto tokenizer = Tokenizer::from_folder(model_dir());
  std::vector<nlohmann::json> cases(g.at("prompts").begin(), g.at("prompts").end());
  cases.insert(cases.end(), g.at("chats").begin(), g.at("chats").end());
  for (const auto& c : cases) {
    auto expected = pinned_ids(c);
    GenerationRequest request{ids(c.at("prompt_ids")), {}};
    request.sampling.temperature = 0.0f;
    request.sampling.max_tokens = static_cast<int64_t>(expected.size());
    request.sampling.ignore_eos = true;
    auto result = testing::run_request(*engine, request);
    EXPECT_EQ(result.tokens, expected) << c.dump();
    if (c.contains("pinned_text") && expected.size() == c.at("greedy_ids").size()) {
      EXPECT_EQ(tokenizer->decode(result.tokens, true), c.at("pinned_text").get<std::string>());
    }
  }
}

// What `make run` does: the binary, the prompt as text, greedy.
TEST(DefaultModel, GenerateCommandPrintsTheGoldenText) {
  auto g = golden();
  auto first = g.at("prompts")[g.at("make_run").get<size_t>()];
  std::string prompt = first.at("prompt");
  ASSERT_EQ(prompt.find('\''), std::string::npos);
  std::string command = std::string(BRISK_BINARY) + " generate --model " + model_dir().string() + " --prompt '" +
                        prompt + "' --max-tokens " + std::to_string(first.at("greedy_ids").size()) +
                        " --ignore-eos --json 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  auto json = nlohmann::json::parse(out);
  EXPECT_EQ(ids(json.at("prompt_token_ids")), ids(first.at("prompt_ids")));
  EXPECT_EQ(ids(json.at("token_ids")), ids(first.at("greedy_ids")));
  EXPECT_EQ(json.at("text").get<std::string>(), first.at("text").get<std::string>());
}

}  // namespace
}  // namespace brisk
