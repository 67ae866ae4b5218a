#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace brisk::testing {

// Environment overrides let binaries built on one machine run from another checkout (the GPU
// machine receives a copy of the tree at a different path).
std::filesystem::path test_data_dir() {
  const char* env = std::getenv("BRISK_TEST_DATA_DIR");
  return env && *env ? env : BRISK_TEST_DATA_DIR;
}
std::filesystem::path shared_testdata_dir() {
  const char* env = std::getenv("BRISK_SHARED_TESTDATA");
  return env && *env ? env : BRISK_SHARED_TESTDATA;
}

namespace {
struct TempDirs {
  std::vector<std::filesystem::path> paths;
  ~TempDirs() {
    std::error_code ec;
    for (auto& p : paths) std::filesystem::remove_all(p, ec);
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}
}  // namespace

std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::random_device rd;
  auto path = std::filesystem::temp_directory_path() /
              (prefix + "-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path);
  temp_dirs().paths.push_back(path);
  return path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void expect_error(const std::function<void()>& fn, ErrorCode code, const std::vector<std::string>& substrings) {
  try {
    fn();
    ADD_FAILURE() << "expected an error (" << error_code_name(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& s : substrings)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "'" << e.what() << "' does not name '" << s << "'";
  }
}

std::vector<RequestResult> collect_samples(RequestStream& stream, int32_t num_samples) {
  std::vector<RequestResult> results(num_samples);
  std::vector<bool> finished(num_samples, false);
  for (int32_t num_finished = 0; num_finished < num_samples;) {
    auto event = stream.next(std::chrono::seconds(60));
    if (!event) throw std::runtime_error("request stream stalled for 60 s");
    if (event->index < 0 || event->index >= num_samples || finished[event->index])
      throw std::runtime_error("event for sample " + std::to_string(event->index) + " out of range or after its end");
    RequestResult& result = results[event->index];
    result.text += event->text;
    if (event->kind == RequestEvent::Kind::kToken) {
      result.tokens.push_back(event->token);
      result.logprobs.push_back(event->logprob);
      result.top_logprobs.push_back(event->top_logprobs);
      continue;
    }
    result.finish_reason = event->finish_reason;
    result.error = event->error;
    result.num_cached_prompt_tokens = event->num_cached_prompt_tokens;
    finished[event->index] = true;
    num_finished++;
  }
  return results;
}

RequestResult collect(RequestStream& stream) { return collect_samples(stream, 1)[0]; }

RequestResult run_request(Engine& engine, GenerationRequest request) {
  return collect(*engine.submit(std::move(request)));
}

}  // namespace brisk::testing
