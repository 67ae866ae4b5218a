// Shared helpers for brisk's tests.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "brisk/engine.h"

namespace brisk::testing {

// tests/data in the source tree.
std::filesystem::path test_data_dir();
// ../shared/testdata (may be absent: tests that need it skip with GTEST_SKIP()).
std::filesystem::path shared_testdata_dir();
// A fresh empty temporary folder, removed at process exit.
std::filesystem::path make_temp_dir(const std::string& prefix);
std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& content);

// Expects fn to throw brisk::Error with the code and a message containing every substring
// (an error must name what is wrong).
void expect_error(const std::function<void()>& fn, ErrorCode code, const std::vector<std::string>& substrings);

// Everything one request's stream produced.
struct RequestResult {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // per token
  std::string text;  // of every event, the terminal one's included
  FinishReason finish_reason = FinishReason::kError;
  std::string error;
  int64_t num_cached_prompt_tokens = 0;
};
// Drains a stream (fails the test with an exception if it stalls for a minute).
RequestResult collect(RequestStream& stream);
// The same for a request of n samples: one result per sample index; throws if a sample's events
// come after its terminal event or an index is out of range. (A request rejected at admission
// has a single terminal event: collect it with num_samples 1.)
std::vector<RequestResult> collect_samples(RequestStream& stream, int32_t num_samples);
RequestResult run_request(Engine& engine, GenerationRequest request);

}  // namespace brisk::testing

// Skips the current test when the shared test data folder is missing.
#define BRISK_REQUIRE_SHARED_TESTDATA()                                                   \
  do {                                                                                    \
    if (!std::filesystem::exists(::brisk::testing::shared_testdata_dir()))                \
      GTEST_SKIP() << "shared test data not found at "                                    \
                   << ::brisk::testing::shared_testdata_dir() << "; skipping";            \
  } while (0)
