// The token-mask cache's reuse of a bounded repetition's entries: a position classified from a
// sibling's entry (ByteRule::repeat_family), or sharing it where both bounds pass the longest
// token, equals the position classified on its own, whichever siblings came first.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
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
  Classes c{mask.accepted_ids, mask.uncertain};
  for (size_t w = 0; w < mask.accepted_bits.size(); ++w)
    for (uint32_t bits = mask.accepted_bits[w]; bits != 0; bits &= bits - 1)
      c.accepted.push_back(int32_t(w * 32 + size_t(std::countr_zero(bits))));
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
