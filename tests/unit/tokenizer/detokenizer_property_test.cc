// Randomized (rapidcheck) properties: byte-level tokenizers round-trip valid UTF-8, and the
// incremental detokenizer's deltas are valid UTF-8 that concatenate to decode().
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace brisk {
namespace {

// Code points from ASCII, whitespace, Latin, CJK, RTL scripts, emoji and joiners.
rc::Gen<std::string> gen_text() {
  auto cp = rc::gen::oneOf(rc::gen::inRange<char32_t>(0x20, 0x7F), rc::gen::element<char32_t>(' ', '\n', '\t', '\r'),
                           rc::gen::inRange<char32_t>(0xA0, 0x250), rc::gen::inRange<char32_t>(0x4E00, 0x4F00),
                           rc::gen::inRange<char32_t>(0x0590, 0x0700), rc::gen::inRange<char32_t>(0x1F300, 0x1F6FF),
                           rc::gen::element<char32_t>(0x200D, 0xFE0F, 0x3000, 0xFFFD));
  return rc::gen::map(rc::gen::container<std::vector<char32_t>>(cp), [](const std::vector<char32_t>& cps) {
    std::string s;
    for (char32_t c : cps) utf8::append(s, c);
    return s;
  });
}

const Tokenizer& shared(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) {
    if (name == "llama2_spm") t = Tokenizer::from_folder(testing::folder_with("llama2", "tokenizer.model"));
    else if (name == "internlm2") t = Tokenizer::from_folder(testing::shared_tokenizer_dir("internlm2"));
    else if (name.starts_with("synthetic")) t = Tokenizer::from_folder(testing::test_data_dir() / "tokenizer" / name);
    else t = Tokenizer::from_folder(testing::shared_tokenizer_dir(name));
  }
  return *t;
}

TEST(TokenizerProperty, ByteLevelRoundTrip) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  for (std::string name : {"gpt2", "qwen2"}) {
    const Tokenizer& tokenizer = shared(name);
    bool ok = rc::check(name + " decode(encode(s)) == s", [&] {
      std::string s = *gen_text();
      std::string expected = name == "qwen2" ? unicode_normalize(s, "NFC") : s;  // Qwen2 NFC-normalizes
      RC_ASSERT(tokenizer.decode(tokenizer.encode(s, false), false) == expected);
    });
    EXPECT_TRUE(ok) << name;
  }
}

TEST(TokenizerProperty, SyntheticByteLevelRoundTrip) {
  const Tokenizer& tokenizer = shared("synthetic_bytelevel");
  EXPECT_TRUE(rc::check("synthetic decode(encode(s)) == NFKC(s)", [&] {
    std::string s = *gen_text();
    RC_ASSERT(tokenizer.decode(tokenizer.encode(s, true), true) == unicode_normalize(s, "NFKC"));
  }));
}

// Random ids, biased towards byte-fallback pieces, specials and low (short, byte-like) ids.
void check_streaming(const std::string& name) {
  const Tokenizer& tokenizer = shared(name);
  std::vector<int32_t> specials, partials;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_special(id)) specials.push_back(id);
    if (tokenizer.is_partial_token(id)) partials.push_back(id);
  }
  bool ok = rc::check(name + " streaming == decode", [&] {
    auto gen_id = rc::gen::weightedOneOf<int32_t>(
        {{4, rc::gen::inRange<int32_t>(0, tokenizer.vocab_size())},
         {2, rc::gen::inRange<int32_t>(0, std::min(tokenizer.vocab_size(), 600))},
         {partials.empty() ? 0u : 4u, rc::gen::elementOf(partials.empty() ? std::vector<int32_t>{0} : partials)},
         {specials.empty() ? 0u : 1u, rc::gen::elementOf(specials.empty() ? std::vector<int32_t>{0} : specials)}});
    auto ids = *rc::gen::container<std::vector<int32_t>>(gen_id);
    bool skip = *rc::gen::arbitrary<bool>();
    IncrementalDetokenizer detok(tokenizer, skip);
    std::string text;
    for (int32_t id : ids) {
      std::string delta = detok.add(id);
      RC_ASSERT(utf8::is_valid(delta));
      text += delta;
    }
    std::string rest = detok.finish();
    RC_ASSERT(utf8::is_valid(rest));
    RC_ASSERT(text + rest == tokenizer.decode(ids, skip));
  });
  EXPECT_TRUE(ok) << name;
}

TEST(DetokenizerProperty, SyntheticTokenizers) {
  check_streaming("synthetic_bytelevel");
  check_streaming("synthetic_metaspace");
}

TEST(DetokenizerProperty, RealTokenizers) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  for (std::string name : {"gpt2", "phi3", "qwen2", "llama2_spm", "internlm2"}) check_streaming(name);
}

TEST(Detokenizer, HoldsIncompleteCharacters) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  const Tokenizer& tokenizer = shared("phi3");
  // "中" as three byte-fallback pieces: nothing comes out until the run ends.
  std::vector<int32_t> ids = {*tokenizer.token_to_id("<0xE4>"), *tokenizer.token_to_id("<0xB8>"),
                              *tokenizer.token_to_id("<0xAD>"), *tokenizer.token_to_id("▁ok")};
  IncrementalDetokenizer detok(tokenizer, true);
  EXPECT_EQ(detok.add(ids[0]), "");
  EXPECT_EQ(detok.add(ids[1]), "");
  EXPECT_EQ(detok.add(ids[2]), "");
  EXPECT_EQ(detok.add(ids[3]), "中 ok");
  EXPECT_EQ(detok.finish(), "");
}

}  // namespace
}  // namespace brisk
