// Stop strings end generation at the right text, never leak into the stream, and hold back
// only what could still become a stop string.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine/stop_strings.h"
#include "engine_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> gpt2() { return Tokenizer::from_folder(testing::shared_testdata_dir() / "tokenizers" / "gpt2"); }

TEST(StopStrings, SplitAcrossTokensIsCaughtAndHeldBack) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto tokenizer = gpt2();
  auto ids = tokenizer->encode("The quick brown fox jumps over the lazy dog", false);
  StopStringMatcher matcher(*tokenizer, true, {"fox jum"}, false);
  std::string streamed;
  bool stopped = false;
  for (int32_t id : ids) {
    auto step = matcher.add(id);
    streamed += step.text;
    EXPECT_EQ(streamed.find("fox"), std::string::npos) << "held-back text leaked: " << streamed;
    if ((stopped = step.stopped)) break;
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(streamed, "The quick brown ");
  EXPECT_EQ(matcher.finish(), "");
  EXPECT_EQ(matcher.matched(), "fox jum");
}

TEST(StopStrings, FalseStartsAreReleasedAndIncludeStopWorks) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto tokenizer = gpt2();
  auto ids = tokenizer->encode("abc abd abc abe", false);
  StopStringMatcher none(*tokenizer, true, {"abe!"}, false);
  std::string streamed;
  for (int32_t id : ids) streamed += none.add(id).text;
  streamed += none.finish();
  EXPECT_EQ(streamed, "abc abd abc abe");
  EXPECT_EQ(none.matched(), "");

  StopStringMatcher include(*tokenizer, true, {" abd", "zzz"}, true);
  streamed.clear();
  for (int32_t id : ids) {
    auto step = include.add(id);
    streamed += step.text;
    if (step.stopped) break;
  }
  EXPECT_EQ(streamed, "abc abd");
}

TEST(StopStrings, EngineStopsAtTheStringAndNeedsATokenizer) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  fs::path dir = testing::make_temp_dir("brisk-stop");
  for (const char* name : {"vocab.json", "merges.txt"})
    fs::copy_file(testing::shared_testdata_dir() / "tokenizers" / "gpt2" / name, dir / name);
  auto config = nlohmann::json::parse(
      testing::read_file(testing::test_data_dir() / "models" / "llama-gqa4-hd64-tied-llama3rope-bf16" / "config.json"));
  config["vocab_size"] = 50257;
  config["eos_token_id"] = 50256;
  testing::write_file(dir / "config.json", config.dump());
  EngineOptions options;
  options.model_dir = dir.string();
  options.dummy_weights = true;
  options.num_kv_blocks = 64;
  auto engine = Engine::create(options);
  ASSERT_TRUE(engine->has_tokenizer());

  GenerationRequest request{gpt2()->encode("Hello world, this is", false), {}};
  request.sampling.temperature = 0.8f;
  request.sampling.seed = 3;
  request.sampling.max_tokens = 40;
  request.sampling.ignore_eos = true;
  std::string stop_string;
  auto collect_text = [&](const GenerationRequest& r, FinishReason* reason, size_t* num_tokens) {
    auto stream = engine->submit(r);
    std::string text;
    *num_tokens = 0;
    while (true) {
      auto e = *stream->next(std::chrono::seconds(60));
      text += e.text;
      if (e.kind == RequestEvent::Kind::kFinished) {
        *reason = e.finish_reason;
        stop_string = e.stop_string;
        return text;
      }
      ++*num_tokens;
    }
  };
  FinishReason reason;
  size_t full_tokens, stopped_tokens;
  std::string full = collect_text(request, &reason, &full_tokens);
  ASSERT_GE(full.size(), 20u) << full;
  EXPECT_EQ(stop_string, "");
  std::string stop = full.substr(full.size() / 2, 3);  // three characters from the middle
  request.sampling.stop = {stop};
  std::string stopped = collect_text(request, &reason, &stopped_tokens);
  EXPECT_EQ(reason, FinishReason::kStop);
  EXPECT_EQ(stop_string, stop);
  EXPECT_EQ(stopped, full.substr(0, full.find(stop)));
  EXPECT_LT(stopped_tokens, full_tokens);

  EngineOptions no_tokenizer;
  no_tokenizer.model_dir = (testing::test_data_dir() / "models" / "llama-gqa4-hd64-tied-llama3rope-bf16").string();
  no_tokenizer.num_kv_blocks = 16;
  auto plain = Engine::create(no_tokenizer);
  GenerationRequest r{{1, 2, 3}, {}};
  r.sampling.stop = {"x"};
  auto result = testing::run_request(*plain, r);
  EXPECT_EQ(result.finish_reason, FinishReason::kError);
  EXPECT_NE(result.error.find("stop strings need a tokenizer"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace brisk
