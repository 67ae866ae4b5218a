// `brisk bench latency|throughput|serve` end to end: latency over batch sizes, ShareGPT workloads
// (vLLM's length filter, answer lengths as output lengths, no silent repeats, vocabulary checks)
// and the HTTP benchmark against brisk's own server or one that is not there.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_brisk.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

// stdout and stderr apart: the JSON report is on stdout, the workload line on stderr.
using testing::RunResult;
RunResult run_brisk(const std::string& args) { return testing::run_brisk(args, /*separate_stderr=*/true); }

fs::path repo_dir() { return testing::test_data_dir().parent_path().parent_path(); }
fs::path tiny_austen() { return repo_dir() / "models" / "tiny-austen"; }
fs::path test_model(const std::string& name) { return testing::test_data_dir() / "models" / name; }

// A small random-weight Llama with tiny-austen's tokenizer (or none) and a 4096-token context,
// so that prompts and answers at the filter's bounds run in a moment on the CPU.
fs::path dummy_model(bool with_tokenizer, int64_t vocab_size = 8192) {
  fs::path dir = testing::make_temp_dir("brisk-bench-model");
  const fs::path base = test_model("llama-gqa4-hd64-tied-llama3rope-bf16");
  auto config = nlohmann::json::parse(testing::read_file(base / "config.json"));
  config["vocab_size"] = vocab_size;
  config["max_position_embeddings"] = 4096;
  config["rope_scaling"] = nullptr;
  testing::write_file(dir / "config.json", config.dump());
  if (with_tokenizer)
    for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(tiny_austen() / name, dir / name);
  return dir;
}

// Text of exactly `num_tokens` tokens for tiny-austen's tokenizer (plus BOS for prompts).
std::string text_of(int64_t num_tokens, const char* word = "the") {
  std::string text = word;
  for (int64_t i = 1; i < num_tokens; ++i) text += std::string(" ") + word;
  static const auto tokenizer = Tokenizer::from_folder(tiny_austen());
  if (static_cast<int64_t>(tokenizer->encode(text, false).size()) != num_tokens)
    throw std::runtime_error("tiny-austen does not make one token of each '" + std::string(word) + "'");
  return text;
}

nlohmann::json conversation(const std::string& prompt, const std::string& answer) {
  nlohmann::json turns = {{{"from", "human"}, {"value", prompt}}};
  if (!answer.empty()) turns.push_back({{"from", "gpt"}, {"value", answer}});
  return {{"id", "x"}, {"conversations", turns}};
}

fs::path write_dataset(const nlohmann::json& conversations) {
  fs::path path = testing::make_temp_dir("brisk-bench-data") / "sharegpt.json";
  testing::write_file(path, conversations.dump());
  return path;
}

// Prompt lengths count BOS: a prompt of text_of(n - 1) has n tokens.
nlohmann::json boundary_dataset() {
  return nlohmann::json::array({
      conversation(text_of(2), text_of(10)),     // prompt 3: too short
      conversation(text_of(3), text_of(10)),     // prompt 4, output 10
      conversation(text_of(9), text_of(3)),      // output 3: too short
      conversation(text_of(9), text_of(4)),      // prompt 10, output 4
      conversation(text_of(1024), text_of(4)),   // prompt 1025: too long
      conversation(text_of(1023), text_of(4)),   // prompt 1024, output 4
      conversation(text_of(999), text_of(1049)), // 1000 + 1049 = 2049: too long together
      conversation(text_of(999), text_of(1048)), // 1000 + 1048 = 2048
      {{"id", "y"}, {"conversations", {{{"from", "gpt"}, {"value", text_of(8)}}}}},  // no human turn first
  });
}

std::string throughput_args(const fs::path& model, const fs::path& dataset, int64_t num_prompts) {
  return "bench throughput --model " + model.string() + " --dummy-weights --dataset " + dataset.string() +
         " --num-prompts " + std::to_string(num_prompts) + " --json";
}

TEST(BenchDataset, VllmFilterBoundsAndAnswerLengths) {
  const fs::path model = dummy_model(true);
  const fs::path dataset = write_dataset(boundary_dataset());
  RunResult r = run_brisk(throughput_args(model, dataset, 4));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["num_requests"], 4);
  EXPECT_EQ(json["num_failed"], 0);
  EXPECT_EQ(json["input_tokens"], 4 + 10 + 1024 + 1000);
  EXPECT_EQ(json["output_tokens"], 10 + 4 + 4 + 1048);  // ignore_eos: each answer's token count
  EXPECT_NE(r.err.find("workload: " + dataset.string() + " (output lengths of the answers): 4 requests, prompt "
                       "tokens mean 509.5 / median 505, output tokens mean 266.5 / median 7"), std::string::npos)
      << r.err;
}

TEST(BenchDataset, MorePromptsThanConversationsIsAnErrorUnlessRepeatsAreAllowed) {
  const fs::path model = dummy_model(true);
  nlohmann::json data = nlohmann::json::array();
  for (int i = 0; i < 3; ++i) data.push_back(conversation(text_of(5 + i), text_of(4 + i)));
  const fs::path dataset = write_dataset(data);
  RunResult r = run_brisk(throughput_args(model, dataset, 4));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--num-prompts 4 exceeds the 3 usable conversations of " + dataset.string()), std::string::npos)
      << r.err;
  r = run_brisk(throughput_args(model, dataset, 7) + " --allow-repeats");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["num_requests"], 7);
  EXPECT_EQ(json["output_tokens"], 2 * (4 + 5 + 6) + 4);  // cycled in file order
  EXPECT_NE(r.err.find("3 distinct prompts repeated"), std::string::npos) << r.err;
}

TEST(BenchDataset, PromptOnlyFilesGetSeededOutputLengths) {
  const fs::path model = dummy_model(true);
  nlohmann::json data = nlohmann::json::array();
  for (int i = 0; i < 6; ++i) data.push_back(conversation(text_of(4 + i), ""));
  data.push_back(conversation(text_of(2), ""));  // prompt of 3 tokens: skipped
  const fs::path dataset = write_dataset(data);
  const std::string args = throughput_args(model, dataset, 6) + " --mean-output-len 12 --max-input-len 6";
  RunResult a = run_brisk(args + " --seed 1"), b = run_brisk(args + " --seed 1"), c = run_brisk(args + " --seed 2");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out), jc = nlohmann::json::parse(c.out);
  EXPECT_EQ(ja["num_requests"], 6);
  EXPECT_EQ(ja["input_tokens"], 5 + 6 + 6 * 4);  // cut to --max-input-len 6
  EXPECT_EQ(ja["output_tokens"], jb["output_tokens"]);
  EXPECT_NE(ja["output_tokens"], jc["output_tokens"]);
  EXPECT_NE(a.err.find("no answers: seeded output lengths of mean 12"), std::string::npos) << a.err;
  EXPECT_EQ(run_brisk(throughput_args(model, dataset, 7)).exit_code, 1);
}

TEST(BenchDataset, IdsOutsideTheVocabularyAreAnErrorOrFoldedForASubstituteTokenizer) {
  const fs::path dataset = write_dataset(nlohmann::json::array({conversation("Mr. Darcy and Elizabeth", text_of(4))}));
  RunResult r = run_brisk(throughput_args(dummy_model(true, 300), dataset, 1));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is outside the model's vocabulary of 300 ids"), std::string::npos) << r.err;
  r = run_brisk(throughput_args(dummy_model(false, 300), dataset, 1));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has none; give --tokenizer DIR"), std::string::npos) << r.err;
  r = run_brisk(throughput_args(dummy_model(false, 300), dataset, 1) + " --tokenizer " + tiny_austen().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["output_tokens"], 4);
  EXPECT_NE(r.err.find("ids folded into the vocabulary of 300"), std::string::npos) << r.err;
}

// The real ShareGPT sample with answers, through two real tokenizers: how many conversations
// pass the filter (the error names the count; the same as vLLM's filter over Hugging Face
// `tokenizers` encodings of the file).
TEST(BenchDataset, SharegptSampleWithRealTokenizers) {
  BRISK_REQUIRE_SHARED_TESTDATA();
  const fs::path file = testing::shared_testdata_dir() / "workloads" / "sharegpt_v3_ppl_samples_2048.json";
  const fs::path model = dummy_model(false, 128256);
  for (auto [name, num_usable] : {std::pair<std::string, int>{"qwen2", 2027}, {"phi3", 2048}}) {
    RunResult r = run_brisk(throughput_args(model, file, 5000) + " --tokenizer " +
                            (testing::shared_testdata_dir() / "tokenizers" / name).string());
    EXPECT_EQ(r.exit_code, 1) << name;
    EXPECT_NE(r.err.find("exceeds the " + std::to_string(num_usable) + " usable conversations of " + file.string()),
              std::string::npos) << name << ": " << r.err;
  }
}

std::string serve_args(const fs::path& model) {
  return "bench serve --model " + model.string() + " --kv-cache-memory 64MiB --json ";
}

void expect_sane_figures(const nlohmann::json& json) {
  EXPECT_GT(json["seconds"].get<double>(), 0);
  EXPECT_GT(json["requests_per_s"].get<double>(), 0);
  EXPECT_GT(json["output_tokens_per_s"].get<double>(), 0);
  for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
    const auto& d = json[key];
    // On a loaded machine chunks that arrive in one read have gaps of 0: ITL's median may be 0.
    EXPECT_GT(d[std::string_view(key) == "itl_ms" ? "p99" : "p50"].get<double>(), 0) << key;
    EXPECT_LE(d["p50"].get<double>(), d["p99"].get<double>() + 1e-9) << key;
    EXPECT_LT(d["p99"].get<double>(), 1000 * json["seconds"].get<double>() + 1) << key;
  }
  EXPECT_LE(json["ttft_ms"]["p50"].get<double>(), json["e2e_ms"]["p50"].get<double>());
}

TEST(BenchLatency, EachBatchSizeRunsInTurn) {
  const fs::path model = dummy_model(false);
  const RunResult r = run_brisk("bench latency --model " + model.string() +
                                " --dummy-weights --input-len 8 --output-len 6 --num-iters 1 --batch-size 1,3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["input_len"], 8);
  EXPECT_EQ(j["output_len"], 6);
  ASSERT_EQ(j["runs"].size(), 2u) << r.out;
  for (size_t i = 0; i < 2; ++i) {
    const auto& run = j["runs"][i];
    EXPECT_EQ(run["batch_size"], i == 0 ? 1 : 3);
    EXPECT_GT(run["tpot_ms"].get<double>(), 0);
    const double tokens_per_s = run["batch_size"].get<double>() * 1e3 / run["tpot_ms"].get<double>();
    EXPECT_NEAR(run["decode_tokens_per_s"].get<double>(), tokens_per_s, 1e-6);
  }
  // Three sequences' KV on top of the same weights.
  EXPECT_GT(j["runs"][1]["bytes_per_step"].get<double>(), j["runs"][0]["bytes_per_step"].get<double>());
}

TEST(BenchLatency, ABatchLargerThanTheEngineTakesIsRefused) {
  const fs::path model = dummy_model(false);
  const RunResult r = run_brisk("bench latency --model " + model.string() +
                                " --dummy-weights --max-num-seqs 4 --batch-size 1,8 --json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--batch-size 8 exceeds --max-num-seqs 4"), std::string::npos) << r.err;
  EXPECT_NE(run_brisk("bench latency --model " + model.string() + " --dummy-weights --batch-size 0").exit_code, 0);
}

TEST(BenchServe, BriskServerInThisProcess) {
  RunResult r = run_brisk(serve_args(tiny_austen()) + "--num-prompts 5 --input-len 16 --output-len 8");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["bench"], "serve");
  EXPECT_EQ(json["num_requests"], 5);
  EXPECT_EQ(json["num_failed"], 0);
  EXPECT_EQ(json["input_tokens"], 5 * 16);
  EXPECT_EQ(json["output_tokens"], 5 * 8);
  EXPECT_EQ(json["request_rate"], "inf");
  expect_sane_figures(json);
}

TEST(BenchServe, DatasetWithPoissonArrivalsAndAConcurrencyCap) {
  nlohmann::json data = nlohmann::json::array();
  for (int i = 0; i < 4; ++i) data.push_back(conversation("It is a truth universally acknowledged " + text_of(i + 1),
                                                          text_of(4 + 2 * i)));
  RunResult r = run_brisk(serve_args(tiny_austen()) + "--dataset " + write_dataset(data).string() +
                          " --num-prompts 4 --request-rate 40 --max-concurrency 2 --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["num_requests"], 4);
  EXPECT_EQ(json["output_tokens"], 4 + 6 + 8 + 10);
  EXPECT_EQ(json["max_concurrency"], 2);
  expect_sane_figures(json);
}

// Without a tokenizer the server streams a chunk per token all the same (empty text): TPOT and
// ITL are measured, not zero.
TEST(BenchServe, ModelWithoutTokenizerStreamsAChunkPerToken) {
  RunResult r = run_brisk(serve_args(test_model("llama-gqa4-hd64-tied-llama3rope-bf16")) +
                          "--num-prompts 3 --input-len 8 --output-len 6");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["output_tokens"], 3 * 6);
  expect_sane_figures(json);
}

TEST(BenchServe, RefusedConnectionIsAClearError) {
  RunResult r = run_brisk("bench serve --base-url http://127.0.0.1:1 --tokenizer " + tiny_austen().string() +
                          " --num-prompts 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot connect to http://127.0.0.1:1: Connection refused"), std::string::npos) << r.err;
}

// A server that accepts connections and never answers: the request times out instead of hanging.
TEST(BenchServe, SilentServerTimesOut) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 16), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  RunResult r = run_brisk("bench serve --base-url " + url + " --tokenizer " + tiny_austen().string() +
                          " --num-prompts 2 --request-timeout 0.5");
  close(listener);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no answer for 0.5 s (--request-timeout)"), std::string::npos) << r.err;
}

TEST(BenchServe, NeedsATarget) {
  RunResult r = run_brisk("bench serve --num-prompts 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("needs --base-url"), std::string::npos) << r.err;
  r = run_brisk("bench serve --base-url https://example.com --num-prompts 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("https is not supported"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace brisk
