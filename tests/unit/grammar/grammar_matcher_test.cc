// The matcher's API on a small hand-made vocabulary: stop tokens only where the grammar can
// end, rollback, forced continuations, partial UTF-8 tokens, and the cached masks against the
// reference (every token through the parser) along random walks.
#include <gtest/gtest.h>

#include <random>

#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_converter.h"
#include "grammar_test_util.h"

namespace brisk::grammar {
namespace {

using testing::mask_ids;

// ids: 0 "<s>" special, 1 "</s>" stop, then pieces.
std::shared_ptr<const TokenVocab> small_vocab() {
  std::vector<std::string> pieces = {"<s>", "</s>", "{", "}", "\"", "\"a", "a", "b", "ab", ":", ",", " ", "1",
                                     "12", "\xc3", "\xa9", "\xc3\xa9", "\"}", "[", "]", "true", "null", "x"};
  std::vector<bool> special(pieces.size(), false);
  special[0] = special[1] = true;
  return std::make_shared<const TokenVocab>(pieces, VocabEncoding::kRaw, special, std::vector<int32_t>{1});
}

std::vector<int32_t> allowed(GrammarMatcher& m) {
  std::vector<uint32_t> words(size_t(m.bitmask_words()));
  m.fill_next_token_bitmask(words);
  return mask_ids(words, int32_t(words.size() * 32));
}

TEST(GrammarMatcher, StopTokenOnlyWhereTheGrammarCanEnd) {
  auto g = std::make_shared<const CompiledGrammar>(parse_ebnf(R"(root ::= "a" "b"?)"), small_vocab());
  GrammarMatcher m(g);
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{6, 8}));  // "a", "ab"
  EXPECT_FALSE(m.accept_token(1));
  EXPECT_FALSE(m.accept_token(0));  // special
  EXPECT_TRUE(m.accept_token(6));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1, 7}));  // "</s>", "b"
  EXPECT_TRUE(m.can_terminate());
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_EQ(allowed(m), std::vector<int32_t>{});
  EXPECT_FALSE(m.accept_token(7));
}

TEST(GrammarMatcher, RollbackRestoresMasks) {
  auto g = std::make_shared<const CompiledGrammar>(
      json_schema_to_grammar(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})"),
      small_vocab());
  GrammarMatcher m(g);
  std::vector<std::vector<int32_t>> masks{allowed(m)};
  for (int32_t token : {2, 5, 4, 9, 12, 3}) {  // {"a":1}
    ASSERT_TRUE(m.accept_token(token)) << token;
    masks.push_back(allowed(m));
  }
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.is_terminated());
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_EQ(allowed(m), masks[6]);
  m.rollback(3);
  EXPECT_EQ(allowed(m), masks[3]);
  EXPECT_EQ(m.num_accepted_tokens(), 3);
  EXPECT_THROW(m.rollback(4), Error);
}

TEST(GrammarMatcher, JumpForwardStringIsTheForcedText) {
  auto g = std::make_shared<const CompiledGrammar>(
      json_schema_to_grammar(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})",
                             {.any_whitespace = false}),
      small_vocab());
  GrammarMatcher m(g);
  EXPECT_EQ(m.find_jump_forward_string(), "{\"name\":\"");
  EXPECT_TRUE(m.accept_string("{\"name\":\"x\""));
  EXPECT_EQ(m.find_jump_forward_string(), "}");
  EXPECT_EQ(m.num_accepted_tokens(), 1);  // find_jump_forward_string changes nothing
}

TEST(GrammarMatcher, PartialUtf8Tokens) {
  auto g = std::make_shared<const CompiledGrammar>(parse_ebnf(R"(root ::= [^a]+)"), small_vocab());
  GrammarMatcher m(g);
  std::vector<int32_t> first = allowed(m);
  EXPECT_TRUE(std::count(first.begin(), first.end(), 14));   // lead byte \xc3
  EXPECT_FALSE(std::count(first.begin(), first.end(), 15));  // lone continuation byte
  ASSERT_TRUE(m.accept_token(14));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{15}));  // only the continuation completes it
  ASSERT_TRUE(m.accept_token(15));
  EXPECT_TRUE(m.can_terminate());
}

// The cached mask equals the reference mask along random walks over several grammars.
TEST(GrammarMatcher, CachedMasksEqualReferenceMasks) {
  auto vocab = small_vocab();
  std::vector<Grammar> grammars;
  grammars.push_back(builtin_json_grammar());
  grammars.push_back(json_schema_to_grammar(R"({"type":"array","items":{"type":"string"},"maxItems":3})"));
  grammars.push_back(regex_to_grammar(R"((ab|a)+[0-9]{1,3}\}?)"));
  grammars.push_back(parse_ebnf("root ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= \"true\" | \"null\" | root"));
  std::mt19937 rng(7);
  for (size_t i = 0; i < grammars.size(); ++i) {
    auto g = std::make_shared<const CompiledGrammar>(grammars[i], vocab);
    for (int walk = 0; walk < 20; ++walk) {
      GrammarMatcher m(g);
      for (int step = 0; step < 12 && !m.is_terminated(); ++step) {
        std::vector<uint32_t> cached(size_t(m.bitmask_words())), reference(size_t(m.bitmask_words()));
        m.fill_next_token_bitmask(cached);
        m.fill_next_token_bitmask_reference(reference);
        ASSERT_EQ(cached, reference) << "grammar " << i << " walk " << walk << " step " << step;
        std::vector<int32_t> ids = mask_ids(cached, vocab->vocab_size());
        if (ids.empty()) break;
        ASSERT_TRUE(m.accept_token(ids[rng() % ids.size()]));
      }
    }
  }
}

}  // namespace
}  // namespace brisk::grammar

namespace brisk::grammar {
namespace {

// A long right-recursive run (a JSON string) closes in constant stack and time.
TEST(GrammarMatcher, LongStringCloses) {
  auto g = std::make_shared<const CompiledGrammar>(json_schema_to_grammar(R"({"type":"string"})"), small_vocab());
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_string("\""));
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(m.accept_string(chunk));
  EXPECT_FALSE(m.can_terminate());
  ASSERT_TRUE(m.accept_token(4));  // the closing quote
  EXPECT_TRUE(m.can_terminate());
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1}));
}

}  // namespace
}  // namespace brisk::grammar
