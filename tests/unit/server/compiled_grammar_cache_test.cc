// The server's compiled structured-output grammars: one vocabulary for every grammar, equal
// constraints share one CompiledGrammar (and so one token-mask cache), the least recently used
// are dropped beyond the capacity, and the engine's EOS ids are the grammar's stop tokens.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "server/compiled_grammar_cache.h"
#include "test_util.h"

namespace brisk::server {
namespace {

std::unique_ptr<Tokenizer> synthetic_tokenizer() {
  return Tokenizer::from_folder(::brisk::testing::test_data_dir() / "tokenizer/synthetic_bytelevel");
}

TEST(CompiledGrammarCache, EqualConstraintsShareOneGrammar) {
  auto tokenizer = synthetic_tokenizer();
  const int32_t eos = *tokenizer->eos_token_id();
  CompiledGrammarCache cache(*tokenizer, {eos});
  auto yes_no = cache.get(choice_constraint({"yes", "no"}, "guided_choice"));
  EXPECT_EQ(cache.get(choice_constraint({"yes", "no"}, "structured_outputs.choice")), yes_no);
  auto regex = cache.get(regex_constraint("yes|no", "guided_regex"));
  EXPECT_NE(regex, yes_no);  // the same language, but another kind: another key
  EXPECT_EQ(&regex->vocab(), &yes_no->vocab());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(yes_no->vocab().stop_ids(), std::vector<int32_t>{eos});
}

TEST(CompiledGrammarCache, DropsTheLeastRecentlyUsed) {
  auto tokenizer = synthetic_tokenizer();
  CompiledGrammarCache cache(*tokenizer, {}, /*capacity=*/2);
  auto a = cache.get(regex_constraint("a", "guided_regex"));
  auto b = cache.get(regex_constraint("b", "guided_regex"));
  EXPECT_EQ(cache.get(regex_constraint("a", "guided_regex")), a);  // a is now the most recent
  cache.get(regex_constraint("c", "guided_regex"));                 // drops b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.get(regex_constraint("a", "guided_regex")), a);
  EXPECT_NE(cache.get(regex_constraint("b", "guided_regex")), b);   // compiled again
}

// Requests that ask for a constraint at once get the one compile, its token-mask cache filled.
TEST(CompiledGrammarCache, ConcurrentRequestsShareOneCompile) {
  auto tokenizer = synthetic_tokenizer();
  CompiledGrammarCache cache(*tokenizer, {});
  const OutputConstraint constraint = regex_constraint("[a-z]{0,300}(,[0-9]{1,40})*", "guided_regex");
  std::vector<std::shared_ptr<const grammar::CompiledGrammar>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = cache.get(constraint); });
  for (std::thread& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_GT(got[0]->mask_cache().num_entries(), 300u);  // the bounded string's positions, precomputed
}

// The grammar allows a stop token only where it can end; ids past the tokenizer's vocabulary
// (a model's padded rows) are left out.
TEST(CompiledGrammarCache, StopTokensEndTheGrammar) {
  auto tokenizer = synthetic_tokenizer();
  const int32_t eos = *tokenizer->eos_token_id();
  CompiledGrammarCache cache(*tokenizer, {eos, tokenizer->vocab_size() + 5});
  grammar::GrammarMatcher matcher(cache.get(choice_constraint({"ab"}, "guided_choice")));
  EXPECT_FALSE(matcher.accept_token(eos));
  ASSERT_TRUE(matcher.accept_string("ab"));
  EXPECT_TRUE(matcher.accept_token(eos));
  EXPECT_TRUE(matcher.is_terminated());
}

}  // namespace
}  // namespace brisk::server
