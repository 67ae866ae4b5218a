// The token-mask cache: a bounded repetition's position classified from a sibling's entry
// (ByteRule::repeat_family), or sharing it where both bounds pass the longest token, equals the
// position classified on its own, whichever siblings came first; the positions precompute finds
// are those walks reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar_test_util.h"

namespace brisk::grammar {
namespace {

// Tokens of one to seven bytes over the repeated class, with and without the closing quote,
// and a two-byte character split over tokens.
std::shared_ptr<const TokenVocab> repetition_vocab() {
  std::vector<std::string> pieces = {"</s>", "a", "ab", "aba", "abab", "ababa", "ababab", "abababa", "b", "bb",
                                     "\"", "a\"", "ab\"", "abab\"", "ababab\"", "\"}", "ab\"}", "}", "\xc3",
                                     "\xa9", "\xc3\xa9", "\xc3\xa9" "a", "a\xc3", "\xa9\xc3\xa9\"", "c"};
  std::vector<bool> special(pieces.size(), false);
  return std::make_shared<const TokenVocab>(pieces, VocabEncoding::kRaw, special, std::vector<int32_t>{0});
}

struct Classes {
  std::vector<int32_t> accepted, uncertain;
  bool operator==(const Classes&) const = default;
};

Classes classes_of(const PositionMask& mask) {
  Classes c{mask.accepted_tokens(), mask.uncertain};
  std::sort(c.accepted.begin(), c.accepted.end());
  return c;
}

// The family's start positions, by copies left.
std::vector<ParserItem> family_starts(const ByteGrammar& g) {
  std::vector<std::pair<int32_t, ParserItem>> starts;
  for (const ByteRule& rule : g.rules)
    if (rule.repeat_family >= 0) starts.push_back({rule.repeat_left, ParserItem{rule.alternatives[1], 0, 0, 0}});
  std::sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ParserItem> items;
  for (const auto& s : starts) items.push_back(s.second);
  return items;
}

TEST(TokenMaskCache, RepetitionSiblingsEqualPositionsClassifiedAlone) {
  auto vocab = repetition_vocab();
  const Grammar grammars[] = {
      parse_ebnf("root ::= \"\\\"\" [ab\\u00e9]{0,12} \"\\\"\" \"}\""),
      parse_ebnf("root ::= \"\\\"\" [ab\\u00e9]{2,7} (\"\\\"}\" | \"\\\"\")"),
      json_schema_to_grammar(R"({"type":"object","properties":{"t":{"type":"string","maxLength":5}},"required":["t"]})",
                             JsonSchemaOptions{.any_whitespace = false}),
  };
  std::mt19937 rng(3);
  for (size_t i = 0; i < std::size(grammars); ++i) {
    const auto alone = std::make_shared<const CompiledGrammar>(grammars[i], vocab);
    const std::vector<ParserItem> starts = family_starts(alone->byte_grammar());
    ASSERT_GE(starts.size(), 5u) << "grammar " << i << ": the repetition is not a family";
    std::vector<Classes> expected;
    for (const ParserItem& item : starts) {  // each in a cache of its own: no siblings
      const auto fresh = std::make_shared<const CompiledGrammar>(grammars[i], vocab);
      expected.push_back(classes_of(fresh->mask_cache().get(item, {})));
    }
    for (int order = 0; order < 3; ++order) {  // fewest copies left first, most first, shuffled
      std::vector<size_t> indices(starts.size());
      for (size_t k = 0; k < indices.size(); ++k) indices[k] = k;
      if (order == 1) std::reverse(indices.begin(), indices.end());
      if (order == 2) std::shuffle(indices.begin(), indices.end(), rng);
      const auto shared = std::make_shared<const CompiledGrammar>(grammars[i], vocab);
      for (size_t k : indices) {
        EXPECT_EQ(classes_of(shared->mask_cache().get(starts[k], {})), expected[k])
            << "grammar " << i << " order " << order << " position " << k;
      }
    }
  }
}

// (x?){0,4}: the outer copies may take no bytes, so only each copy's own x? (one helper) is a
// family.
TEST(TokenMaskCache, RepetitionOfANullableChildIsNoFamily) {
  const auto g = std::make_shared<const CompiledGrammar>(parse_ebnf("root ::= (\"a\"?){0,4} \"b\""), repetition_vocab());
  std::map<int32_t, int> members;
  for (const ByteRule& rule : g->byte_grammar().rules)
    if (rule.repeat_family >= 0) ++members[rule.repeat_family];
  EXPECT_EQ(members.size(), 4u);
  for (const auto& [family, count] : members) EXPECT_EQ(count, 1) << g->byte_grammar().rules[family].name;
}

}  // namespace
}  // namespace brisk::grammar

namespace brisk::grammar {
namespace {

// After precompute, walks through the grammar find every position between characters computed
// (the keys grammar_positions.h predicts are those the matcher asks for), and the masks equal
// the reference (every token through the parser).
TEST(TokenMaskCache, PrecomputedPositionsAreThoseTheMatcherReaches) {
  std::vector<std::string> pieces = {"</s>", "{", "}", "\"", ":", ",", "[", "]", "a", "b", "ab", "true", "false",
                                     "null", "0", "1", "-", ".", "e", " ", "\"t\":", "\"n\":[", "\"s\":\"",
                                     "\"}", "]}", "\xc3\xa9", "\xc3", "\xa9", "t", "n", "s", "\\", "\\n"};
  auto vocab = std::make_shared<const TokenVocab>(pieces, VocabEncoding::kRaw, std::vector<bool>(pieces.size(), false),
                                                  std::vector<int32_t>{0});
  const Grammar grammars[] = {
      json_schema_to_grammar(R"({"type":"object","properties":{"t":{"type":"string","maxLength":5},
                                 "n":{"type":"array","items":{"type":"boolean"},"maxItems":3},
                                 "s":{"type":"string"}},"required":["t","n"]})",
                             JsonSchemaOptions{.any_whitespace = false}),
      parse_ebnf("root ::= \"\\\"\" [ab\\u00e9]{0,9} \"\\\"\" (\"}\" | \"b\" root)"),
      parse_ebnf("root ::= \"[\" (\"a\" | \"b\" \"true\"?)* \"]\" (\",\" root)?"),
      builtin_json_grammar(),
  };
  std::mt19937 rng(11);
  for (size_t i = 0; i < std::size(grammars); ++i) {
    const auto g = std::make_shared<const CompiledGrammar>(grammars[i], vocab);
    const size_t precomputed = g->precompute(std::chrono::minutes(1));
    EXPECT_GT(precomputed, 5u) << "grammar " << i;
    size_t misses = 0, steps = 0;
    for (int walk = 0; walk < 30; ++walk) {
      GrammarMatcher m(g);
      for (int step = 0; step < 16 && !m.is_terminated(); ++step) {
        std::vector<uint32_t> cached(size_t(m.bitmask_words())), reference(size_t(m.bitmask_words()));
        const size_t before = g->mask_cache().num_entries();
        m.fill_next_token_bitmask(cached);
        misses += g->mask_cache().num_entries() - before;
        m.fill_next_token_bitmask_reference(reference);
        ASSERT_EQ(cached, reference) << "grammar " << i << " walk " << walk << " step " << step;
        std::vector<int32_t> ids = testing::mask_ids(cached, vocab->vocab_size());
        // Whole characters only (no token ending inside é), so every position is between characters.
        std::erase_if(ids, [&](int32_t id) {
          const std::string& b = vocab->token_bytes(id);
          return !b.empty() && (uint8_t(b.back()) == 0xc3 || uint8_t(b.front()) == 0xa9);
        });
        if (ids.empty()) break;
        ASSERT_TRUE(m.accept_token(ids[rng() % ids.size()]));
        ++steps;
      }
    }
    EXPECT_GT(steps, 100u) << "grammar " << i;
    if (i < 3) {  // the JSON grammar's nested values have shorter contexts at run time (recursion)
      EXPECT_EQ(misses, 0u) << "grammar " << i << ": positions computed during the walks";
    }
  }
}

}  // namespace
}  // namespace brisk::grammar
