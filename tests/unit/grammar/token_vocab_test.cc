// Token strings to bytes for each vocabulary encoding, and the real tokenizers' vocabularies.
#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace brisk::grammar {
namespace {

TEST(GrammarTokenVocab, DecodesPieces) {
  EXPECT_EQ(TokenVocab::decode_piece("\xe2\x96\x81the", VocabEncoding::kByteFallback), " the");
  EXPECT_EQ(TokenVocab::decode_piece("<0x0A>", VocabEncoding::kByteFallback), "\n");
  EXPECT_EQ(TokenVocab::decode_piece("\xc4\xa0the\xc4\x8a", VocabEncoding::kByteLevel), " the\n");
  EXPECT_EQ(TokenVocab::decode_piece("\xc3\xa6", VocabEncoding::kByteLevel), "\xe6");  // a lone lead byte
  EXPECT_EQ(TokenVocab::decode_piece("<0x0A>", VocabEncoding::kRaw), "<0x0A>");
}

TEST(GrammarTokenVocab, SortsNormalTokensAndSetsStopAndSpecial) {
  TokenVocab vocab({"b", "<s>", "ab", "a", "</s>", ""}, VocabEncoding::kRaw, {false, true, false, false, false, false},
                   {4});
  EXPECT_EQ(vocab.sorted(), (std::vector<int32_t>{3, 2, 0}));
  EXPECT_EQ(vocab.sorted_lcp(), (std::vector<int32_t>{0, 1, 0}));
  EXPECT_TRUE(vocab.is_special(1));
  EXPECT_TRUE(vocab.is_special(5));  // empty pieces never match text
  EXPECT_TRUE(vocab.is_stop(4));
  EXPECT_EQ(vocab.first_byte_begin('b'), 2);
}

TEST(GrammarTokenVocab, RealTokenizers) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto qwen = testing::shared_vocab("qwen2");
  EXPECT_EQ(qwen->encoding(), VocabEncoding::kByteLevel);
  EXPECT_TRUE(qwen->is_special(151644));  // <|im_start|>
  auto llama = testing::shared_vocab("llama2");
  EXPECT_EQ(llama->encoding(), VocabEncoding::kByteFallback);
  EXPECT_EQ(llama->token_bytes(13), "\n");  // <0x0A>
  EXPECT_TRUE(llama->is_stop(2));
}

}  // namespace
}  // namespace brisk::grammar
