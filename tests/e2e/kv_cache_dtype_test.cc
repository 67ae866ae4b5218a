// --kv-cache-dtype on the CPU backend: the trained default model's held-out perplexity (brisk
// perplexity) within the bounds of the unquantized cache (int8 and fp8 0.5%, int4 3%),
// cache capacity at the same memory (head_dim 128, bf16: >= 1.95x for int8 / fp8, >= 3.5x for
// int4), and `brisk perplexity` agreeing with the model's own forward over one window.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "run_brisk.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

fs::path repo_dir() { return testing::test_data_dir().parent_path().parent_path(); }

double perplexity(const std::string& kv_cache_dtype, const std::string& extra = "") {
  const fs::path model = repo_dir() / "models" / "tiny-austen";
  testing::RunResult r = testing::run_brisk(
      "perplexity --model " + model.string() + " --file " + (testing::test_data_dir() / "austen-heldout.txt").string() +
          " --kv-cache-dtype " + kv_cache_dtype + " --json " + extra,
      /*separate_stderr=*/true);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return nlohmann::json::parse(r.out).at("perplexity").get<double>();
}

// Four windows of 512 tokens (1,024 tokens scored) keep the test short.
TEST(KvCacheDtype, HeldOutPerplexityStaysClose) {
  const double exact = perplexity("auto", "--max-windows 4");
  for (auto [dtype, bound] : std::map<std::string, double>{{"int8", 0.005}, {"fp8", 0.005}, {"int4", 0.03}}) {
    const double quantized = perplexity(dtype, "--max-windows 4");
    EXPECT_NE(quantized, exact) << dtype << ": the cache is not quantized";
    EXPECT_LT(std::abs(quantized / exact - 1), bound) << dtype << ": " << quantized << " vs " << exact;
  }
}

// One window of 1024 tokens: exp of the mean negative logprob of tokens 1..1023, which the AWQ
// test computes from the model's logits directly (tests/e2e/awq_quantize_test.cc: 50.92).
TEST(KvCacheDtype, PerplexityOfOneWindowIsTheForwards) {
  EXPECT_NEAR(perplexity("auto", "--context 1024 --max-windows 1"), 50.915, 0.01);
}

TEST(KvCacheDtype, QuantizedCachesHoldMoreTokens) {
  auto capacity = [](const std::string& dtype) {
    EngineOptions options;
    options.model_dir = (testing::test_data_dir() / "models" / "qwen3-gqa4-hd128-qknorm-bf16").string();
    options.kv_cache_memory = "16MiB";
    options.kv_cache_dtype = dtype;
    auto engine = Engine::create(options);
    return static_cast<double>(engine->stats().kv_capacity_tokens);
  };
  const double bf16 = capacity("auto");
  EXPECT_GE(capacity("int8") / bf16, 1.95);
  EXPECT_GE(capacity("fp8") / bf16, 1.95);
  EXPECT_GE(capacity("int4") / bf16, 3.5);
}

TEST(KvCacheDtype, UnknownDtypeIsRefused) {
  EngineOptions options;
  options.model_dir = (testing::test_data_dir() / "models" / "qwen3-gqa4-hd128-qknorm-bf16").string();
  options.kv_cache_dtype = "int2";
  try {
    Engine::create(options);
    FAIL() << "int2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-cache-dtype 'int2'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisk
