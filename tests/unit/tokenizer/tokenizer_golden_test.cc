// Goldens made by tools/make_tokenizer_goldens.py with HF `tokenizers` (and `sentencepiece` for
// tokenizer.model files): encode with and without special tokens, decode with
// skip_special_tokens on and off, and decode of random id lists (byte pieces, specials).
// The incremental detokenizer is checked against the same decodes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace brisk {
namespace {

using nlohmann::json;

struct Golden {
  std::string name;
  json data;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Loads tests/data/tokenizer/NAME.json and its tokenizer; empty tokenizer when the shared
// test data it needs is absent.
Golden load_golden(const std::string& name) {
  Golden g{name, json::parse(testing::read_file(testing::test_data_dir() / "tokenizer" / (name + ".json"))), nullptr};
  std::string source = g.data.at("tokenizer").get<std::string>();
  if (source.starts_with("tests/data/")) {
    g.tokenizer = Tokenizer::from_folder(testing::test_data_dir() / source.substr(std::string("tests/data/").size()));
    return g;
  }
  if (!std::filesystem::exists(testing::shared_testdata_dir())) return g;
  auto slash = source.find('/');
  g.tokenizer = slash == std::string::npos
                    ? Tokenizer::from_folder(testing::shared_tokenizer_dir(source))
                    : Tokenizer::from_folder(testing::folder_with(source.substr(0, slash), source.substr(slash + 1)));
  return g;
}

std::string stream_decode(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip) {
  IncrementalDetokenizer detok(tokenizer, skip);
  std::string text;
  for (int32_t id : ids) {
    std::string delta = detok.add(id);
    EXPECT_TRUE(utf8::is_valid(delta)) << "delta splits a UTF-8 character";
    text += delta;
  }
  std::string rest = detok.finish();
  EXPECT_TRUE(utf8::is_valid(rest));
  return text + rest;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, EncodeMatches) {
  Golden g = load_golden(GetParam());
  if (!g.tokenizer) GTEST_SKIP() << "shared test data not found; skipping " << g.name;
  for (const auto& c : g.data["cases"]) {
    std::string text = c["text"].get<std::string>();
    EXPECT_EQ(g.tokenizer->encode(text, false), c["ids"].get<std::vector<int32_t>>()) << g.name << ": '" << text << "'";
    EXPECT_EQ(g.tokenizer->encode(text, true), c["ids_special"].get<std::vector<int32_t>>())
        << g.name << " (add_special_tokens): '" << text << "'";
  }
}

TEST_P(TokenizerGolden, DecodeMatches) {
  Golden g = load_golden(GetParam());
  if (!g.tokenizer) GTEST_SKIP() << "shared test data not found; skipping " << g.name;
  auto check = [&](const json& c, const std::vector<int32_t>& ids) {
    std::string what = testing::ids_to_string(ids);
    EXPECT_EQ(g.tokenizer->decode(ids, false), c["decode"].get<std::string>()) << g.name << ": ids " << what;
    EXPECT_EQ(g.tokenizer->decode(ids, true), c["decode_skip"].get<std::string>()) << g.name << " (skip): ids " << what;
  };
  for (const auto& c : g.data["cases"]) check(c, c["ids_special"].get<std::vector<int32_t>>());
  for (const auto& c : g.data["decodes"]) check(c, c["ids"].get<std::vector<int32_t>>());
}

TEST_P(TokenizerGolden, IncrementalDetokenizerMatchesDecode) {
  Golden g = load_golden(GetParam());
  if (!g.tokenizer) GTEST_SKIP() << "shared test data not found; skipping " << g.name;
  auto check = [&](const json& c, const std::vector<int32_t>& ids) {
    std::string what = testing::ids_to_string(ids);
    EXPECT_EQ(stream_decode(*g.tokenizer, ids, false), c["decode"].get<std::string>()) << g.name << ": ids " << what;
    EXPECT_EQ(stream_decode(*g.tokenizer, ids, true), c["decode_skip"].get<std::string>())
        << g.name << " (skip): ids " << what;
  };
  for (const auto& c : g.data["cases"]) check(c, c["ids_special"].get<std::vector<int32_t>>());
  for (const auto& c : g.data["decodes"]) check(c, c["ids"].get<std::vector<int32_t>>());
}

INSTANTIATE_TEST_SUITE_P(All, TokenizerGolden,
                         ::testing::Values("synthetic_bytelevel", "synthetic_metaspace", "llama2_json", "phi3_json",
                                           "gpt2_vocab_merges", "qwen2_vocab_merges", "llama2_spm", "internlm2_spm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace brisk
