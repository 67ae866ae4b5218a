// Tokenizer API: folder detection, special tokens, config, invalid UTF-8 input, tiktoken files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace brisk {
namespace {

TEST(Utf8, ReplacesMaximalSubpartsLikePython) {
  // Expected values are Python's bytes.decode("utf-8", errors="replace").
  const std::string r(utf8::kReplacementChar);
  EXPECT_EQ(utf8::to_valid("abc"), "abc");
  EXPECT_EQ(utf8::to_valid("a\xE4\xB8"), "a" + r);
  EXPECT_EQ(utf8::to_valid("\xF0\x80\x80"), r + r + r);
  EXPECT_EQ(utf8::to_valid("\xED\xA0\x80"), r + r + r);  // surrogate
  EXPECT_EQ(utf8::to_valid("\xC0\xAF"), r + r);
  EXPECT_EQ(utf8::to_valid("a\xE4\xB8\xAD" "b\xE4"), "a\xE4\xB8\xAD" "b" + r);
  EXPECT_EQ(utf8::to_valid("\xFF\xFE"), r + r);
  EXPECT_EQ(utf8::to_valid("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
}

TEST(Utf8, IncompleteSuffix) {
  EXPECT_EQ(utf8::incomplete_suffix_length("ab"), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xE4"), 1u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xE4\xB8"), 2u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xE4\xB8\xAD"), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xFF"), 0u);
}

TEST(TokenizerApi, InvalidUtf8IsReplacedBeforeEncoding) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  for (const char* name : {"gpt2", "phi3", "qwen2"}) {
    auto tokenizer = Tokenizer::from_folder(testing::shared_tokenizer_dir(name));
    std::string bad = "caf\xC3 ok \xE4\xB8 end\xFF";
    EXPECT_EQ(tokenizer->encode(bad, false), tokenizer->encode(utf8::to_valid(bad), false)) << name;
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(bad, false), false).find("\xFF"), std::string::npos) << name;
  }
}

TEST(TokenizerApi, Phi3SpecialsAndConfig) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto tokenizer = Tokenizer::from_folder(testing::shared_tokenizer_dir("phi3"));
  EXPECT_EQ(tokenizer->vocab_size(), 32011);
  EXPECT_EQ(tokenizer->token_to_id("<|user|>"), 32010);
  EXPECT_EQ(tokenizer->id_to_token(32007), "<|end|>");
  EXPECT_TRUE(tokenizer->is_special(32007));
  EXPECT_FALSE(tokenizer->is_special(2));  // "</s>" is an added token but not special in Phi-3
  EXPECT_FALSE(tokenizer->is_special(1000));
  EXPECT_EQ(tokenizer->bos_token_id(), 1);
  EXPECT_EQ(tokenizer->eos_token_id(), 32000);  // tokenizer_config.json: eos_token "<|endoftext|>"
  ASSERT_NE(tokenizer->chat_template(), nullptr);
  EXPECT_NE(tokenizer->chat_template()->find("<|assistant|>"), std::string::npos);
  EXPECT_FALSE(tokenizer->config().add_bos_token.value_or(true));
  // rstrip=true: "<|user|>" swallows the newline after it.
  auto ids = tokenizer->encode("<|user|>\nHi<|end|>\n", false);
  EXPECT_EQ(ids.front(), 32010);
  EXPECT_EQ(tokenizer->token_to_id("missing-token"), std::nullopt);
  EXPECT_EQ(tokenizer->id_to_token(999999), std::nullopt);
}

TEST(TokenizerApi, Llama2BothFormatsAgree) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto json = Tokenizer::from_folder(testing::folder_with("llama2", "tokenizer.json"));
  auto spm = Tokenizer::from_folder(testing::folder_with("llama2", "tokenizer.model"));
  EXPECT_EQ(json->bos_token_id(), 1);
  EXPECT_EQ(spm->bos_token_id(), 1);
  EXPECT_EQ(spm->eos_token_id(), 2);
  EXPECT_EQ(json->vocab_size(), 32000);
  EXPECT_EQ(spm->vocab_size(), 32000);
  for (std::string text : {"Hello world", " leading space", "日本語 text\n\twith tabs", "emoji 🤖 here"}) {
    EXPECT_EQ(json->encode(text, true), spm->encode(text, true)) << text;
    auto ids = json->encode(text, true);
    // skip=false: HF 0.23 does not skip Llama-2's "<s>" (a normalized added token, decoded as
    // "▁<s>", which is not in the special set); the SentencePiece tokenizer does.
    EXPECT_EQ(json->decode(ids, false), spm->decode(ids, false)) << text;
  }
  EXPECT_TRUE(spm->is_special(1));
  EXPECT_FALSE(spm->is_special(100));
}

TEST(TokenizerApi, Qwen2FolderSpecials) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto tokenizer = Tokenizer::from_folder(testing::shared_tokenizer_dir("qwen2"));
  EXPECT_EQ(tokenizer->vocab_size(), 151646);
  EXPECT_EQ(tokenizer->token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(tokenizer->eos_token_id(), 151643);
  EXPECT_FALSE(tokenizer->bos_token_id().has_value());
  auto ids = tokenizer->encode("<|im_start|>user\nhi<|im_end|>", true);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 151645);
  EXPECT_EQ(tokenizer->decode(ids, true), "user\nhi");
}

TEST(TokenizerApi, ConfigChatTemplateList) {
  auto config = TokenizerConfig::parse(
      R"({"bos_token": {"content": "<s>", "__type": "AddedToken"}, "add_bos_token": true,
          "chat_template": [{"name": "default", "template": "A"}, {"name": "tool_use", "template": "B"}]})",
      "test");
  EXPECT_EQ(config.bos_token, "<s>");
  EXPECT_EQ(config.add_bos_token, true);
  ASSERT_NE(config.chat_template(), nullptr);
  EXPECT_EQ(*config.chat_template(), "A");
  EXPECT_EQ(*config.chat_template("tool_use"), "B");
  EXPECT_EQ(config.chat_template("rag"), nullptr);
}

// A tiktoken rank file made from GPT-2's vocabulary encodes like GPT-2 wherever Llama-3's
// regex splits like GPT-2's (tiktoken's r50k_base is GPT-2's BPE).
TEST(TokenizerApi, TiktokenRankFile) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto vocab = nlohmann::json::parse(testing::read_file(testing::shared_tokenizer_dir("gpt2") / "vocab.json"));
  std::vector<std::string> by_rank(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    std::string bytes;
    ASSERT_TRUE(byte_level::decode(token, bytes));
    by_rank[id.get<size_t>()] = bytes;
  }
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string file;
  for (size_t rank = 0; rank < by_rank.size(); ++rank) {
    const std::string& b = by_rank[rank];
    for (size_t i = 0; i < b.size(); i += 3) {
      uint32_t chunk = static_cast<uint8_t>(b[i]) << 16;
      if (i + 1 < b.size()) chunk |= static_cast<uint8_t>(b[i + 1]) << 8;
      if (i + 2 < b.size()) chunk |= static_cast<uint8_t>(b[i + 2]);
      file += kAlphabet[(chunk >> 18) & 63];
      file += kAlphabet[(chunk >> 12) & 63];
      file += i + 1 < b.size() ? kAlphabet[(chunk >> 6) & 63] : '=';
      file += i + 2 < b.size() ? kAlphabet[chunk & 63] : '=';
    }
    file += " " + std::to_string(rank) + "\n";
  }
  auto dir = testing::make_temp_dir("brisk-tiktoken");
  testing::write_file(dir / "tokenizer.model", file);
  EXPECT_TRUE(looks_like_tiktoken(file.substr(0, 200)));
  auto tiktoken = Tokenizer::from_folder(dir);
  auto gpt2 = Tokenizer::from_folder(testing::shared_tokenizer_dir("gpt2"));
  EXPECT_EQ(tiktoken->token_to_id("<|begin_of_text|>"), 50257);
  EXPECT_EQ(tiktoken->bos_token_id(), 50257);
  for (std::string text : {"Hello world, this is a tokenizer test.", "the quick brown fox jumps over the lazy dog",
                           "Tokenization of unusual words: antidisestablishmentarianism", "  spaces  and\ttabs"}) {
    auto ids = gpt2->encode(text, false);
    EXPECT_EQ(tiktoken->encode(text, false), ids) << text;
    auto with_bos = tiktoken->encode(text, true);
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos.front(), 50257);
    EXPECT_EQ(tiktoken->decode(ids, false), text);
  }
  auto special = tiktoken->encode("<|start_header_id|>user<|end_header_id|>", false);
  EXPECT_EQ(special.front(), 50257 + 6);
  EXPECT_EQ(tiktoken->decode(special, true), "user");
}

}  // namespace
}  // namespace brisk
