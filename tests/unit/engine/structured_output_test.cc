// Structured output in the engine: every sample of a request with a grammar follows it (random
// weights, so only the masks keep the text in the language), ends "stop" where the grammar ends
// or "length" where max_tokens cuts it, and requests without a grammar are unchanged by their
// neighbours' masks.
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_converter.h"
#include "grammar_test_model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace brisk {
namespace {

constexpr int32_t kEos = testing::GrammarTestModel::kEos;

class StructuredOutput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new testing::GrammarTestModel();
    engine_ = model_->engine().release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    delete model_;
  }


  static inline testing::GrammarTestModel* model_ = nullptr;
  static inline Engine* engine_ = nullptr;
};

TEST_F(StructuredOutput, EverySampleMatchesTheRegexAndEndsAtItsEnd) {
  const auto g = model_->compile(grammar::regex_to_grammar("(yes|no|maybe), [0-9]{1,3}!"));
  const std::regex language("(yes|no|maybe), [0-9]{1,3}!");
  // Submitted together: the samples share steps, each masked by its own matcher.
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (uint64_t seed = 0; seed < 12; ++seed) streams.push_back(engine_->submit(model_->request(g, seed)));
  std::set<std::string> texts;
  for (auto& stream : streams) {
    testing::RequestResult r = testing::collect(*stream);
    ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error << " text: " << r.text;
    EXPECT_TRUE(std::regex_match(r.text, language)) << r.text;
    EXPECT_EQ(r.tokens.back(), kEos);  // the stop token the grammar accepted ends the sample
    texts.insert(r.text);
  }
  EXPECT_GT(texts.size(), 3u) << "sampling still draws among the allowed tokens";
}

TEST_F(StructuredOutput, CompactJsonSchemaParsesAndValidates) {
  const char* schema = R"({"type": "object", "properties": {
      "answer": {"enum": ["yes", "no"]}, "score": {"type": "integer", "minimum": 0, "maximum": 20},
      "ok": {"type": "boolean"}}, "required": ["answer", "score", "ok"]})";
  const auto g = model_->compile(grammar::json_schema_to_grammar(schema, {.any_whitespace = false}));
  GenerationRequest r = model_->request(g, 7);
  r.sampling.n = 4;
  auto stream = engine_->submit(r);
  for (const testing::RequestResult& sample : testing::collect_samples(*stream, 4)) {
    ASSERT_EQ(sample.finish_reason, FinishReason::kStop) << sample.error << " text: " << sample.text;
    const auto json = nlohmann::json::parse(sample.text);
    ASSERT_EQ(json.size(), 3u) << sample.text;
    EXPECT_TRUE(json["answer"] == "yes" || json["answer"] == "no") << sample.text;
    EXPECT_TRUE(json["score"].is_number_integer() && json["score"] >= 0 && json["score"] <= 20) << sample.text;
    EXPECT_TRUE(json["ok"].is_boolean()) << sample.text;
  }
}

TEST_F(StructuredOutput, MaxTokensCutsTheGrammarWithLength) {
  // The grammar needs at least 40 letters; 5 tokens hold a prefix of them.
  const auto g = model_->compile(grammar::parse_ebnf(R"(root ::= [a-z]{40,} "."  )"));
  testing::RequestResult r = testing::run_request(*engine_, model_->request(g, 3, 5));
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.tokens.size(), 5u);
  EXPECT_TRUE(std::regex_match(r.text, std::regex("[a-z]+"))) << r.text;
}

TEST_F(StructuredOutput, GreedyPicksTheMostLikelyAllowedToken) {
  // Greedy under a one-of-two grammar equals the unconstrained greedy output where that is allowed.
  GenerationRequest free{model_->prompt(), {}};
  free.sampling.temperature = 0.0f;
  free.sampling.max_tokens = 1;
  free.sampling.ignore_eos = true;
  const testing::RequestResult first = testing::run_request(*engine_, free);
  ASSERT_EQ(first.tokens.size(), 1u);
  const std::string favourite = first.text;
  const auto g = model_->compile(grammar::parse_ebnf("root ::= " + nlohmann::json(favourite).dump() + " | \"zzz\""));
  GenerationRequest constrained = free;
  constrained.sampling.max_tokens = 8;
  constrained.sampling.grammar = g;
  const testing::RequestResult r = testing::run_request(*engine_, constrained);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.text, favourite);
}

TEST_F(StructuredOutput, UnconstrainedNeighboursAreUnchanged) {
  GenerationRequest free{model_->prompt(), {}};
  free.sampling.temperature = 1.0f;
  free.sampling.seed = 11;
  free.sampling.max_tokens = 24;
  free.sampling.ignore_eos = true;
  const testing::RequestResult alone = testing::run_request(*engine_, free);
  const auto g = model_->compile(grammar::regex_to_grammar("[0-9]{30}"));
  std::vector<std::shared_ptr<RequestStream>> constrained;
  for (uint64_t seed = 0; seed < 4; ++seed) constrained.push_back(engine_->submit(model_->request(g, seed, 30)));
  const testing::RequestResult batched = testing::run_request(*engine_, free);
  for (auto& stream : constrained) {
    testing::RequestResult r = testing::collect(*stream);
    EXPECT_TRUE(std::regex_match(r.text, std::regex("[0-9]*"))) << r.text;
  }
  EXPECT_EQ(batched.tokens, alone.tokens);
}

TEST_F(StructuredOutput, AGrammarOverALargerVocabularyIsRejected) {
  std::vector<std::string> pieces(1000, "a");
  auto big = std::make_shared<grammar::TokenVocab>(pieces, grammar::VocabEncoding::kRaw, std::vector<bool>(1000, false),
                                                   std::vector<int32_t>{kEos});
  auto g = std::make_shared<grammar::CompiledGrammar>(grammar::regex_to_grammar("a+"), big);
  GenerationRequest r = model_->request(std::move(g), 0);
  const testing::RequestResult result = testing::run_request(*engine_, r);
  EXPECT_EQ(result.finish_reason, FinishReason::kError);
  EXPECT_NE(result.error.find("the grammar's vocabulary has 1000 tokens, more than the model's 768"), std::string::npos)
      << result.error;
}

}  // namespace
}  // namespace brisk
