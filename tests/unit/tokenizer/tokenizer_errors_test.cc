// Malformed and unsupported tokenizer files give errors that name the file and field.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace brisk {
namespace {

// Runs from_folder on a folder holding `files` and returns the error (fails if none).
Error load_error(const std::vector<std::pair<std::string, std::string>>& files) {
  auto dir = testing::make_temp_dir("brisk-tok-bad");
  for (const auto& [name, content] : files) testing::write_file(dir / name, content);
  try {
    Tokenizer::from_folder(dir);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "loading did not fail";
  return Error(ErrorCode::kInternal, "");
}

std::string bpe_json(const std::string& model_fields) {
  return R"({"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,)"
         R"("decoder":null,"model":{)" + model_fields + "}}";
}

TEST(TokenizerErrors, EmptyFolderIsNotFound) {
  Error e = load_error({});
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, MissingFolderIsNotFound) {
  try {
    Tokenizer::from_folder("/nonexistent/brisk/tokenizer");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/brisk/tokenizer"), std::string::npos);
  }
}

TEST(TokenizerErrors, BadJsonNamesTheFile) {
  Error e = load_error({{"tokenizer.json", "{\"model\": {"}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, MissingModelNamesTheField) {
  Error e = load_error({{"tokenizer.json", R"({"version":"1.0","added_tokens":[]})"}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("'model'"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, UnknownModelTypesAreUnsupported) {
  for (std::string type : {"WordPiece", "Unigram", "WordLevel"}) {
    Error e = load_error({{"tokenizer.json", bpe_json(R"("type":")" + type + R"(","vocab":{"a":0})")}});
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << type;
    EXPECT_NE(std::string(e.what()).find(type), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, MergeWithUnknownTokenNamesIt) {
  Error e = load_error({{"tokenizer.json", bpe_json(R"("type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b","a zz"])")}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  std::string what = e.what();
  EXPECT_NE(what.find("'zz'"), std::string::npos) << what;
  EXPECT_NE(what.find("merge 1"), std::string::npos) << what;
  EXPECT_NE(what.find("tokenizer.json"), std::string::npos) << what;
}

TEST(TokenizerErrors, UnsupportedPipelineStepNamesField) {
  std::string json = R"({"normalizer":{"type":"Precompiled","precompiled_charsmap":""},)"
                     R"("model":{"type":"BPE","vocab":{"a":0},"merges":[]}})";
  Error e = load_error({{"tokenizer.json", json}});
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("normalizer"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("Precompiled"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, BadVocabMergesFolder) {
  Error e = load_error({{"vocab.json", "[1,2]"}, {"merges.txt", "#version: 0.2\na b\n"}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("vocab.json"), std::string::npos) << e.what();

  e = load_error({{"vocab.json", R"({"a":0,"b":1,"ab":2})"}, {"merges.txt", "#version: 0.2\na b\nab c\n"}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("merges.txt"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("'c'"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, GarbageTokenizerModel) {
  Error e = load_error({{"tokenizer.model", std::string("\x0a\x05garbage\xff\xff", 11)}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("tokenizer.model"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, BadTiktokenRank) {
  Error e = load_error({{"tokenizer.model", "IQ== 0\nIg== x\n"}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("tokenizer.model:2"), std::string::npos) << e.what();
}

TEST(TokenizerErrors, BadTokenizerConfig) {
  Error e = load_error({{"tokenizer_config.json", "{"}, {"vocab.json", R"({"a":0})"}, {"merges.txt", ""}});
  EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
  EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace brisk
