// Jump-forward (EngineOptions::enable_jump_forward): text a grammar forces is appended as the
// tokenizer's tokens (less the last) instead of being sampled one step each. The outputs stay in
// the grammar's language, a request's tokens do not depend on its neighbours or on whether its
// forced text was found while a draw of it was in flight (that draw is discarded), and the
// limits (max_tokens, stop strings) cut forced text as they cut sampled text.
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/ebnf_parser.h"
#include "grammar/regex_converter.h"
#include "grammar_test_model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace brisk {
namespace {

// Forced text at the start, after each choice and at the end; the choices are sampled.
constexpr const char* kRecord = R"re(\{"answer": "(yes|no|maybe)", "count": [0-9], "note": "(fine|bad)"\})re";

class JumpForward : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new testing::GrammarTestModel();
    plain_ = model_->engine().release();
    EngineOptions options;
    options.enable_jump_forward = true;
    engine_ = model_->engine(options).release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    delete plain_;
    delete model_;
  }

  // The tokens jump-forward appends for `text`: its encoding less the last token.
  static std::vector<int32_t> forced_tokens(const std::string& text) {
    std::vector<int32_t> ids = model_->tokenizer().encode(text, false);
    ids.pop_back();
    return ids;
  }

  static inline testing::GrammarTestModel* model_ = nullptr;
  static inline Engine* plain_ = nullptr;
  static inline Engine* engine_ = nullptr;
};

TEST_F(JumpForward, OutputsFollowTheGrammarInFewerSteps) {
  const auto g = model_->compile(grammar::regex_to_grammar(kRecord));
  const std::regex language(kRecord);
  const EngineStats before = engine_->stats();
  const testing::RequestResult r = testing::run_request(*engine_, model_->request(g, 5));
  const EngineStats after = engine_->stats();
  ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error << " text: " << r.text;
  EXPECT_TRUE(std::regex_match(r.text, language)) << r.text;
  // The opening text is appended at admission, as the tokenizer splits it.
  const std::vector<int32_t> opening = forced_tokens("{\"answer\": \"");
  ASSERT_GE(opening.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + static_cast<int64_t>(opening.size())), opening);
  const int64_t forced = after.num_forced_tokens - before.num_forced_tokens;
  const auto generated = static_cast<int64_t>(r.tokens.size());
  EXPECT_EQ(after.num_generated_tokens - before.num_generated_tokens, generated);  // counted before the events
  // Three forced runs of several tokens each (the opening, '", "count": ', '", "note": "').
  EXPECT_GE(forced, static_cast<int64_t>(opening.size()) + 4);
  EXPECT_LT(after.num_steps - before.num_steps, generated) << "forced tokens take no step of their own";

  // Sent again, the prompt (and the forced opening after it) come from the prefix cache; only
  // prompt tokens are counted as cached ones.
  const testing::RequestResult again = testing::run_request(*engine_, model_->request(g, 5));
  EXPECT_EQ(again.tokens, r.tokens);
  EXPECT_GT(again.num_cached_prompt_tokens, 0);
  EXPECT_LE(again.num_cached_prompt_tokens, static_cast<int64_t>(model_->prompt().size()));

  // Without jump-forward every token is sampled: as many steps as tokens.
  const EngineStats plain_before = plain_->stats();
  const testing::RequestResult p = testing::run_request(*plain_, model_->request(g, 5));
  ASSERT_EQ(p.finish_reason, FinishReason::kStop) << p.error;
  EXPECT_TRUE(std::regex_match(p.text, language)) << p.text;
  EXPECT_EQ(plain_->stats().num_forced_tokens, plain_before.num_forced_tokens);
  EXPECT_GE(plain_->stats().num_steps - plain_before.num_steps, static_cast<int64_t>(p.tokens.size()));
}

TEST_F(JumpForward, TheNextDrawSeesTheForcedTokens) {
  // Greedy: a sampled letter, forced text, then free text. The same continuation must come from
  // the engine without jump-forward given the letter and the forced tokens as prompt, and the
  // rest of the grammar (the forced text's last token, left to the model, then the free text).
  // The forced text ends in a space, which many tokens start with: the draw after the forced
  // tokens has a wide choice.
  const std::string forced_text = "QQ said the cat ";
  const auto g = model_->compile(grammar::parse_ebnf(R"(root ::= [a-z] "QQ said the cat " [a-z ]*)"));
  GenerationRequest req = model_->request(g, 0, 24);
  req.sampling.temperature = 0.0f;
  const testing::RequestResult r = testing::run_request(*engine_, req);
  ASSERT_NE(r.finish_reason, FinishReason::kError) << r.error;
  const std::vector<int32_t> forced = forced_tokens(forced_text);
  ASSERT_GE(forced.size(), 2u);
  ASSERT_GT(r.tokens.size(), 1 + forced.size());
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + 1, r.tokens.begin() + 1 + static_cast<int64_t>(forced.size())),
            forced);

  std::string rest = forced_text;
  for (int32_t id : forced) rest.erase(0, model_->vocab().token_bytes(id).size());
  GenerationRequest oracle = req;
  oracle.prompt_ids.push_back(r.tokens[0]);
  oracle.prompt_ids.insert(oracle.prompt_ids.end(), forced.begin(), forced.end());
  oracle.sampling.max_tokens = req.sampling.max_tokens - 1 - static_cast<int64_t>(forced.size());
  const std::string rest_grammar = "root ::= " + nlohmann::json(rest).dump() + " [a-z ]*";
  oracle.sampling.grammar = model_->compile(grammar::parse_ebnf(rest_grammar));
  const testing::RequestResult o = testing::run_request(*plain_, oracle);
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + 1 + static_cast<int64_t>(forced.size()), r.tokens.end()), o.tokens)
      << r.text << " vs " << o.text;
}

TEST_F(JumpForward, TokensDoNotDependOnNeighboursOrOverlap) {
  const auto g = model_->compile(grammar::regex_to_grammar(kRecord));
  std::vector<testing::RequestResult> alone;
  for (uint64_t seed = 0; seed < 4; ++seed) alone.push_back(testing::run_request(*engine_, model_->request(g, seed)));
  // Together, with unconstrained neighbours of other lengths: forced text is now found while a
  // draw of the request is in flight (and that draw discarded).
  std::vector<std::shared_ptr<RequestStream>> streams, neighbours;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    GenerationRequest free{model_->prompt(), {}};
    free.sampling.seed = 100 + seed;
    free.sampling.max_tokens = 5 + 7 * static_cast<int64_t>(seed);
    free.sampling.ignore_eos = true;
    neighbours.push_back(engine_->submit(free));
    streams.push_back(engine_->submit(model_->request(g, seed)));
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    const testing::RequestResult r = testing::collect(*streams[i]);
    EXPECT_EQ(r.tokens, alone[i].tokens) << r.text << " vs " << alone[i].text;
  }
  for (auto& stream : neighbours) EXPECT_EQ(testing::collect(*stream).finish_reason, FinishReason::kLength);
  // A penalized neighbour makes every step wait for the one before: no draw is in flight when
  // forced text is found, and the tokens are the same again.
  GenerationRequest penalized{model_->prompt(), {}};
  penalized.sampling.max_tokens = 40;
  penalized.sampling.ignore_eos = true;
  penalized.sampling.repetition_penalty = 1.3f;
  auto penalized_stream = engine_->submit(penalized);
  const testing::RequestResult r = testing::run_request(*engine_, model_->request(g, 2));
  EXPECT_EQ(r.tokens, alone[2].tokens) << r.text << " vs " << alone[2].text;
  testing::collect(*penalized_stream);
}

TEST_F(JumpForward, RecordedDecodeGraphsGiveTheSameTokens) {
  // Decode steps replay recorded graphs (backend cpu-graphs) with masks applied after them;
  // forced runs make mixed steps between them.
  EngineOptions options;
  options.enable_jump_forward = true;
  options.backend = "cpu-graphs";
  options.max_num_seqs = 8;
  auto graphs = model_->engine(options);
  const auto g = model_->compile(grammar::regex_to_grammar(kRecord));
  std::vector<std::shared_ptr<RequestStream>> eager, replayed;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    eager.push_back(engine_->submit(model_->request(g, seed)));
    replayed.push_back(graphs->submit(model_->request(g, seed)));
  }
  for (size_t i = 0; i < eager.size(); ++i) {
    const testing::RequestResult e = testing::collect(*eager[i]), r = testing::collect(*replayed[i]);
    EXPECT_EQ(r.tokens, e.tokens) << r.text << " vs " << e.text;
    EXPECT_EQ(r.finish_reason, FinishReason::kStop) << r.error;
  }
  EXPECT_GT(graphs->stats().num_graph_steps, 0);
  EXPECT_GT(graphs->stats().num_forced_tokens, 0);
}

TEST_F(JumpForward, SamplesOfOneRequestEachFollowTheGrammar) {
  const auto g = model_->compile(grammar::regex_to_grammar(kRecord));
  GenerationRequest r = model_->request(g, 9);
  r.sampling.n = 3;
  auto stream = engine_->submit(r);
  for (const testing::RequestResult& sample : testing::collect_samples(*stream, 3)) {
    ASSERT_EQ(sample.finish_reason, FinishReason::kStop) << sample.error << " text: " << sample.text;
    EXPECT_TRUE(std::regex_match(sample.text, std::regex(kRecord))) << sample.text;
  }
}

TEST_F(JumpForward, MaxTokensCutsForcedText) {
  const auto g =
      model_->compile(grammar::parse_ebnf(R"(root ::= "the quick brown fox jumps over the lazy dog" [0-9])"));
  const testing::RequestResult r = testing::run_request(*engine_, model_->request(g, 1, 3));
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  const std::vector<int32_t> forced = forced_tokens("the quick brown fox jumps over the lazy dog");
  ASSERT_GE(forced.size(), 3u);
  EXPECT_EQ(r.tokens, std::vector<int32_t>(forced.begin(), forced.begin() + 3));
  // The engine goes on serving.
  EXPECT_EQ(testing::run_request(*engine_, model_->request(g, 1)).finish_reason, FinishReason::kStop);
}

TEST_F(JumpForward, StopStringsCutForcedText) {
  const auto g = model_->compile(grammar::parse_ebnf(R"(root ::= [a-z] " said the cat, and sat down" [0-9])"));
  GenerationRequest req = model_->request(g, 4);
  req.sampling.stop = {"the cat"};
  const testing::RequestResult r = testing::run_request(*engine_, req);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_TRUE(std::regex_match(r.text, std::regex("[a-z] said "))) << r.text;
}

TEST_F(JumpForward, RequestsReportingLogprobsSampleEveryToken) {
  const auto g = model_->compile(grammar::regex_to_grammar(kRecord));
  GenerationRequest req = model_->request(g, 3);
  req.sampling.logprobs = true;
  const int64_t before = engine_->stats().num_forced_tokens;
  const testing::RequestResult r = testing::run_request(*engine_, req);
  EXPECT_EQ(engine_->stats().num_forced_tokens, before);
  EXPECT_EQ(r.tokens, testing::run_request(*plain_, req).tokens);
}

}  // namespace
}  // namespace brisk
