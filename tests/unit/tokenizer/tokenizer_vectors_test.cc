// llama.cpp's tokenizer vectors (HF AutoTokenizer encode(text, add_special_tokens=False)) for
// the real Llama-2, Phi-3, GPT-2 and Qwen2 tokenizers.
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace brisk {
namespace {

using testing::ids_to_string;

struct VectorCase {
  std::string text;
  std::string expected;  // ids separated by spaces
};

std::vector<VectorCase> load_vectors(const std::string& name) {
  auto dir = testing::shared_testdata_dir() / "tokenizer-vectors";
  std::string inp = testing::read_file(dir / (name + ".inp"));
  std::string out = testing::read_file(dir / (name + ".out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<VectorCase> cases;
  std::istringstream lines(out);
  std::string line;
  for (const auto& text : texts) {
    std::getline(lines, line);
    while (!line.empty() && line.front() == ' ') line.erase(0, 1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    cases.push_back({text, line});
  }
  return cases;
}

void check_vectors(const Tokenizer& tokenizer, const std::string& name) {
  auto cases = load_vectors(name);
  ASSERT_GT(cases.size(), 40u) << name;
  int num_failed = 0;
  for (const auto& c : cases) {
    std::string got = ids_to_string(tokenizer.encode(c.text, false));
    EXPECT_EQ(got, c.expected) << name << " text: '" << c.text << "'";
    num_failed += got != c.expected;
  }
  EXPECT_EQ(num_failed, 0) << name;
}

TEST(TokenizerVectors, Llama2TokenizerJson) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto tokenizer = Tokenizer::from_folder(testing::folder_with("llama2", "tokenizer.json"));
  check_vectors(*tokenizer, "llama-spm");
}

TEST(TokenizerVectors, Llama2SentencePieceModel) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  auto tokenizer = Tokenizer::from_folder(testing::folder_with("llama2", "tokenizer.model"));
  check_vectors(*tokenizer, "llama-spm");
}

TEST(TokenizerVectors, Phi3) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  check_vectors(*Tokenizer::from_folder(testing::shared_tokenizer_dir("phi3")), "phi-3");
}

TEST(TokenizerVectors, Gpt2) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  check_vectors(*Tokenizer::from_folder(testing::shared_tokenizer_dir("gpt2")), "gpt-2");
}

TEST(TokenizerVectors, Qwen2) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  check_vectors(*Tokenizer::from_folder(testing::shared_tokenizer_dir("qwen2")), "qwen2");
}

}  // namespace
}  // namespace brisk
