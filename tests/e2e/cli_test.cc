// The `brisk` binary end to end: output formats, seeds, and clear errors for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "run_brisk.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

using testing::run_brisk;
using testing::RunResult;

fs::path model_dir(const std::string& name) { return testing::test_data_dir() / "models" / name; }
const char* kModel = "llama-gqa4-hd64-tied-llama3rope-bf16";

nlohmann::json goldens() { return nlohmann::json::parse(testing::read_file(model_dir(kModel) / "goldens.json")); }

std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

TEST(Cli, GenerateJsonMatchesGreedyGoldens) {
  auto g = goldens();
  auto prompt = g["prompts"][1].get<std::vector<int32_t>>();
  auto expected = g["greedy"][1].get<std::vector<int32_t>>();
  RunResult r = run_brisk("generate --model " + model_dir(kModel).string() + " --prompt-ids " + ids_arg(prompt) +
                          " --max-tokens 12 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["token_ids"].get<std::vector<int32_t>>(),
            std::vector<int32_t>(expected.begin(), expected.begin() + 12));
  EXPECT_EQ(json["finish_reason"], "length");
  EXPECT_EQ(json["logprobs"].size(), 12u);
  for (const auto& lp : json["logprobs"]) EXPECT_LE(lp.get<double>(), 0.0);
}

TEST(Cli, SeededSamplingIsReproducible) {
  std::string base = "generate --model " + model_dir(kModel).string() +
                     " --prompt-ids 1,5,9 --max-tokens 16 --ignore-eos --json --temperature 1.0 --top-p 0.95";
  RunResult a = run_brisk(base + " --seed 7");
  RunResult b = run_brisk(base + " --seed 7");
  RunResult c = run_brisk(base + " --seed 8");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(nlohmann::json::parse(a.out)["token_ids"], nlohmann::json::parse(b.out)["token_ids"]);
  EXPECT_NE(nlohmann::json::parse(a.out)["token_ids"], nlohmann::json::parse(c.out)["token_ids"]);
}

TEST(Cli, DummyWeightsNeedOnlyConfig) {
  fs::path dir = testing::make_temp_dir("brisk-dummy");
  fs::copy_file(model_dir(kModel) / "config.json", dir / "config.json");
  RunResult r = run_brisk("generate --model " + dir.string() + " --dummy-weights --prompt-ids 1,2,3 --max-tokens 4 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["token_ids"].size(), 4u);
}

TEST(Cli, DummyWeightsOfAQuantizedConfigAreInt4) {
  fs::path dir = testing::make_temp_dir("brisk-dummy-awq");
  fs::copy_file(model_dir("llama-gqa4-hd64-tied-awq-g32") / "config.json", dir / "config.json");
  RunResult r = run_brisk("generate --model " + dir.string() + " --dummy-weights --prompt-ids 1,2,3 --max-tokens 4 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["token_ids"].size(), 4u);
}

struct BadCase {
  std::string name;  // the test's name
  std::string args;
  std::string message;  // a substring the error must contain
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << "brisk " << c.args; }

class CliErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(CliErrors, FailWithAClearMessage) {
  std::string args = GetParam().args;
  size_t at = args.find("MODEL");
  if (at != std::string::npos) args.replace(at, 5, model_dir(kModel).string());
  RunResult r = run_brisk(args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(GetParam().message), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, CliErrors,
    ::testing::Values(
        BadCase{"missing_model_folder", "generate --model /nonexistent/model --prompt-ids 1",
                "model folder '/nonexistent/model' does not exist"},
        BadCase{"missing_model_folder_text_prompt", "generate --model /nonexistent/model --prompt hi",
                "model folder '/nonexistent/model' does not exist"},
        BadCase{"token_id_not_a_number", "generate --model MODEL --prompt-ids 1,x", "'x' is not a token id"},
        BadCase{"token_outside_vocabulary", "generate --model MODEL --prompt-ids 1,99999",
                "prompt token 99999 at index 1 is outside the vocabulary"},
        BadCase{"longer_than_context", "generate --model MODEL --prompt-ids 1,2 --max-model-len 8 --max-tokens 7",
                "prompt of 2 tokens plus max_tokens 7 exceeds the model's context length of 8"},
        BadCase{"negative_temperature", "generate --model MODEL --prompt-ids 1 --temperature -1",
                "temperature must be >= 0"},
        BadCase{"top_p_zero", "generate --model MODEL --prompt-ids 1 --top-p 0", "top_p must be in (0, 1]"},
        BadCase{"max_tokens_zero", "generate --model MODEL --prompt-ids 1 --max-tokens 0",
                "max_tokens must be at least 1"},
        BadCase{"unknown_backend", "generate --model MODEL --prompt-ids 1 --backend tpu", "unknown backend 'tpu'"},
        BadCase{"awq_without_tokenizer", "quantize --model MODEL --out /tmp/brisk-unused --method awq",
                "tokenizes the calibration text with the model's tokenizer"},
        BadCase{"group_size_too_large", "quantize --model MODEL --out /tmp/brisk-unused --group-size 128",
                "needs in_features to be a multiple of the group size 128"}),
    [](const auto& info) { return info.param.name; });

// `brisk quantize` writes an AutoAWQ folder that generates like its dequantized reference.
TEST(Cli, QuantizeRtnWritesAnAwqFolderThatRuns) {
  fs::path out = testing::make_temp_dir("brisk-quantize") / "awq";
  RunResult r = run_brisk("quantize --model " + model_dir(kModel).string() + " --out " + out.string() +
                          " --method rtn --group-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto config = nlohmann::json::parse(testing::read_file(out / "config.json"));
  EXPECT_EQ(config["quantization_config"]["quant_method"], "awq");
  EXPECT_EQ(config["quantization_config"]["group_size"], 32);
  EXPECT_TRUE(fs::exists(out / "generation_config.json"));
  RunResult g = run_brisk("generate --model " + out.string() + " --prompt-ids 1,17,300 --max-tokens 4 --ignore-eos --json");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  EXPECT_EQ(nlohmann::json::parse(g.out)["token_ids"].size(), 4u) << g.out;
  RunResult again = run_brisk("quantize --model " + model_dir(kModel).string() + " --out " + out.string());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("already holds a model"), std::string::npos) << again.out;
}

// `brisk quantize --method awq` on the trained default model: the folder loads and generates;
// a calibration text too short for the samples asked and bad options are clear errors.
TEST(Cli, QuantizeAwqWritesAFolderThatGenerates) {
  const fs::path tiny = testing::test_data_dir().parent_path().parent_path() / "models" / "tiny-austen";
  fs::path out = testing::make_temp_dir("brisk-quantize-awq") / "awq";
  const std::string base = "quantize --model " + tiny.string() + " --out " + out.string() + " --method awq ";
  RunResult r = run_brisk(base + "--group-size 128 --calib-samples 2 --calib-seq-len 64");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto config = nlohmann::json::parse(testing::read_file(out / "config.json"));
  EXPECT_EQ(config["quantization_config"]["quant_method"], "awq");
  EXPECT_EQ(config["quantization_config"]["group_size"], 128);
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  RunResult g = run_brisk("generate --model " + out.string() + " --prompt 'It is a truth' --max-tokens 8 --ignore-eos --json");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  EXPECT_EQ(nlohmann::json::parse(g.out)["token_ids"].size(), 8u) << g.out;

  fs::path other = out.parent_path() / "other";
  for (auto [args, message] : {std::pair<std::string, std::string>{"--calib-file /dev/null", "/dev/null is too short"},
                               {"--calib-file /nonexistent.txt", "/nonexistent.txt"},
                               {"--calib-samples 0", "--calib-samples (0) and --calib-seq-len (512) must be positive"},
                               {"--calib-samples 100000", "too short"}}) {
    RunResult bad = run_brisk("quantize --model " + tiny.string() + " --out " + other.string() + " --method awq " + args);
    EXPECT_EQ(bad.exit_code, 1) << args << ": " << bad.out;
    EXPECT_NE(bad.out.find(message), std::string::npos) << args << ": " << bad.out;
    EXPECT_FALSE(fs::exists(other / "config.json")) << args;
  }
}

// Model folders broken in the ways users meet: each error names the culprit.
class BrokenModel : public ::testing::Test {
 protected:
  fs::path copy_model(const std::string& name) {
    fs::path dir = testing::make_temp_dir("brisk-broken");
    for (const auto& entry : fs::directory_iterator(model_dir(name))) fs::copy_file(entry.path(), dir / entry.path().filename());
    return dir;
  }
  RunResult generate(const fs::path& dir) {
    return run_brisk("generate --model " + dir.string() + " --prompt-ids 1,2 --max-tokens 2");
  }
};

TEST_F(BrokenModel, UnknownArchitecture) {
  fs::path dir = copy_model(kModel);
  auto config = nlohmann::json::parse(testing::read_file(dir / "config.json"));
  config["architectures"] = {"GPT2LMHeadModel"};
  testing::write_file(dir / "config.json", config.dump());
  RunResult r = generate(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("GPT2LMHeadModel"), std::string::npos) << r.out;
  r = run_brisk("generate --model " + dir.string() + " --prompt hi");  // a text prompt, no tokenizer
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("GPT2LMHeadModel"), std::string::npos) << r.out;
}

TEST_F(BrokenModel, BadConfigValueNamesTheField) {
  fs::path dir = copy_model(kModel);
  auto config = nlohmann::json::parse(testing::read_file(dir / "config.json"));
  config["num_key_value_heads"] = 3;  // 4 heads are not divisible into 3 groups
  testing::write_file(dir / "config.json", config.dump());
  RunResult r = generate(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("num_key_value_heads"), std::string::npos) << r.out;
}

TEST_F(BrokenModel, TruncatedSafetensorsNamesTheFile) {
  fs::path dir = copy_model(kModel);
  fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") / 2);
  RunResult r = generate(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model.safetensors"), std::string::npos) << r.out;
}

TEST_F(BrokenModel, MissingShardNamesTheShard) {
  fs::path dir = copy_model("qwen3-gqa4-hd128-qknorm-bf16");
  fs::remove(dir / "model-00002-of-00002.safetensors");
  RunResult r = generate(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model-00002-of-00002.safetensors"), std::string::npos) << r.out;
}

TEST_F(BrokenModel, MissingAndMisShapedTensorsAreNamed) {
  // Rewrites the checkpoint without one tensor, then with one tensor of the wrong shape.
  fs::path dir = copy_model("llama-gqa2-hd32-bf16");
  std::string header_json;
  {
    std::string bytes = testing::read_file(dir / "model.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    auto header = nlohmann::json::parse(bytes.substr(8, n));
    auto drop = header["model.layers.1.mlp.up_proj.weight"]["data_offsets"];
    header.erase("model.layers.1.mlp.up_proj.weight");
    header_json = header.dump();
    std::string out(8, '\0');
    uint64_t len = header_json.size();
    std::memcpy(out.data(), &len, 8);
    testing::write_file(dir / "model.safetensors", out + header_json + bytes.substr(8 + n));
  }
  RunResult r = generate(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing"), std::string::npos) << r.out;

  fs::path dir2 = copy_model("llama-gqa2-hd32-bf16");
  {
    std::string bytes = testing::read_file(dir2 / "model.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    auto header = nlohmann::json::parse(bytes.substr(8, n));
    auto& entry = header["model.layers.0.self_attn.o_proj.weight"];
    int64_t rows = entry["shape"][0], cols = entry["shape"][1];
    entry["shape"] = {cols / 2, rows * 2};  // same byte size, wrong shape
    std::string json = header.dump();
    json.resize(n, ' ');
    testing::write_file(dir2 / "model.safetensors", bytes.substr(0, 8) + json + bytes.substr(8 + n));
  }
  r = generate(dir2);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model.layers.0.self_attn.o_proj.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[128, 128]"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

// A model folder with a real tokenizer (Phi-3's, from the shared test data) and a config whose
// vocabulary fits it; weights come from --dummy-weights.
fs::path phi3_dummy_model() {
  fs::path dir = testing::make_temp_dir("brisk-phi3");
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(testing::shared_testdata_dir() / "tokenizers" / "phi3" / name, dir / name);
  auto config = nlohmann::json::parse(testing::read_file(model_dir(kModel) / "config.json"));
  config["vocab_size"] = 32064;
  config["eos_token_id"] = 32000;
  testing::write_file(dir / "config.json", config.dump());
  return dir;
}

TEST(CliText, TokenizeEncodesDecodesAndRendersChat) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  fs::path dir = phi3_dummy_model();
  fs::path input = dir / "input.txt";
  testing::write_file(input, "Hello world");
  RunResult r = run_brisk("tokenize --model " + dir.string() + " --raw < " + input.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json({15043, 3186}));
  testing::write_file(input, "[15043, 3186]");
  r = run_brisk("tokenize --model " + dir.string() + " --decode < " + input.string());
  EXPECT_EQ(r.out, "Hello world");
  testing::write_file(input, R"([{"role": "user", "content": "Hi there"}])");
  r = run_brisk("tokenize --model " + dir.string() + " --chat < " + input.string());
  EXPECT_EQ(r.out, "<|user|>\nHi there<|end|>\n<|assistant|>\n");
  testing::write_file(input, "[1, 2");
  r = run_brisk("tokenize --model " + dir.string() + " --decode < " + input.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("stdin is not valid JSON"), std::string::npos) << r.out;
}

TEST(CliText, GenerateFromTextAndChatPrompts) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  fs::path dir = phi3_dummy_model();
  std::string base = "generate --model " + dir.string() + " --dummy-weights --max-tokens 6 --ignore-eos --json ";
  RunResult r = run_brisk(base + "--prompt 'Hello world'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["prompt_token_ids"], nlohmann::json({15043, 3186}));  // add_bos_token is false for Phi-3
  EXPECT_EQ(json["token_ids"].size(), 6u);
  EXPECT_TRUE(json["text"].is_string());
  r = run_brisk(base + "--chat 'Hi there' --system 'Be brief.'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json = nlohmann::json::parse(r.out);
  EXPECT_GT(json["prompt_token_ids"].size(), 8u);
  r = run_brisk(base + "--prompt-ids 1,2 --prompt 'x'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("excludes"), std::string::npos) << r.out;
}

TEST(CliText, TextPromptWithoutTokenizerIsAClearError) {
  RunResult r = run_brisk("generate --model " + model_dir(kModel).string() + " --prompt 'Hello'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("has no tokenizer"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

// `brisk generate --input dir/in.jsonl --output dir/out.jsonl` on the test model.
RunResult run_batch(const fs::path& dir) {
  return run_brisk("generate --model " + model_dir(kModel).string() + " --input " + (dir / "in.jsonl").string() +
                   " --output " + (dir / "out.jsonl").string());
}

TEST(CliBatch, InputFileRunsAllRequestsAndKeepsOrder) {
  auto g = goldens();
  fs::path dir = testing::make_temp_dir("brisk-batch");
  std::string lines;
  for (size_t i = 0; i < 6; ++i) {
    nlohmann::json line = {{"prompt_ids", g["prompts"][i % 3]}, {"max_tokens", 8 + i}, {"ignore_eos", true},
                           {"temperature", 0}};
    lines += line.dump() + "\n";
  }
  testing::write_file(dir / "in.jsonl", lines + "\n");
  RunResult r = run_batch(dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream results(testing::read_file(dir / "out.jsonl"));
  std::string line;
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(std::getline(results, line));
    auto result = nlohmann::json::parse(line);
    EXPECT_EQ(result["index"], i);
    auto expected = g["greedy"][i % 3].get<std::vector<int32_t>>();
    expected.resize(8 + i);
    EXPECT_EQ(result["token_ids"].get<std::vector<int32_t>>(), expected) << "line " << i;
    EXPECT_EQ(result["finish_reason"], "length");
    EXPECT_TRUE(result.contains("ttft_ms"));
  }
}

// logit_bias and the penalties reach the engine: +100 forces a token, -100 bans the golden first
// one, and a repetition_penalty the engine refuses fails that line alone.
TEST(CliBatch, SamplingFieldsReachTheEngine) {
  auto g = goldens();
  const int32_t first = g["greedy"][0][0].get<int32_t>();
  fs::path dir = testing::make_temp_dir("brisk-batch-sampling");
  const nlohmann::json base = {{"prompt_ids", g["prompts"][0]}, {"max_tokens", 4}, {"ignore_eos", true},
                               {"temperature", 0}};
  nlohmann::json forced = base, banned = base, refused = base;
  forced["logit_bias"] = {{"7", 100}};
  banned["logit_bias"] = {{std::to_string(first), -100}};
  banned["presence_penalty"] = 0.5;
  banned["frequency_penalty"] = 0.5;
  refused["repetition_penalty"] = 0;
  testing::write_file(dir / "in.jsonl", forced.dump() + "\n" + banned.dump() + "\n" + refused.dump() + "\n");
  RunResult r = run_batch(dir);
  EXPECT_EQ(r.exit_code, 1) << r.out;  // the refused line
  std::istringstream results(testing::read_file(dir / "out.jsonl"));
  std::string line;
  ASSERT_TRUE(std::getline(results, line));
  EXPECT_EQ(nlohmann::json::parse(line)["token_ids"].get<std::vector<int32_t>>(), std::vector<int32_t>(4, 7));
  ASSERT_TRUE(std::getline(results, line));
  const auto tokens = nlohmann::json::parse(line)["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_NE(tokens[0], first);
  ASSERT_TRUE(std::getline(results, line));
  const auto result = nlohmann::json::parse(line);
  EXPECT_EQ(result["finish_reason"], "error");
  EXPECT_NE(result["error"].get<std::string>().find("repetition_penalty"), std::string::npos) << line;
}

TEST(CliBatch, BadLinesAreNamed) {
  fs::path dir = testing::make_temp_dir("brisk-batch-bad");
  testing::write_file(dir / "in.jsonl", "{\"prompt_ids\": [1, 2]}\n{\"prompt_ids\": \"nope\"}\n");
  RunResult r = run_batch(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("in.jsonl line 2: field 'prompt_ids' has the wrong type"), std::string::npos) << r.out;
  testing::write_file(dir / "in.jsonl", "{\"prompt_ids\": [1, 2], \"logit_bias\": {\"x\": 1}}\n");
  r = run_batch(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("in.jsonl line 1: field 'logit_bias' maps token ids to numbers, got \"x\""), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace brisk
