// Encode throughput of brisk's tokenizers over the ShareGPT prompts (single thread).
// `make bench-tokenizer` builds it and runs it beside bench/tokenizer_bench.py (HF tokenizers).
// Usage: tokenizer_bench TOKENIZER_DIR [sharegpt.json].
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tokenizer_bench TOKENIZER_DIR [sharegpt.json]\n";
    return 2;
  }
  std::string data_path = argc > 2 ? argv[2] : "../shared/testdata/workloads/sharegpt_v3_filtered_500.json";
  std::ifstream in(data_path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto data = nlohmann::json::parse(ss.str());
  std::vector<std::string> texts;
  size_t num_bytes = 0;
  for (const auto& item : data) {
    texts.push_back(item["conversations"][0]["value"].get<std::string>());
    num_bytes += texts.back().size();
  }
  auto t0 = std::chrono::steady_clock::now();
  auto tokenizer = brisk::Tokenizer::from_folder(argv[1]);
  auto t1 = std::chrono::steady_clock::now();
  size_t num_tokens = 0;
  for (const auto& t : texts) num_tokens += tokenizer->encode(t, false).size();  // cold: fills caches
  auto t2 = std::chrono::steady_clock::now();
  for (const auto& t : texts) num_tokens += tokenizer->encode(t, false).size();
  auto t3 = std::chrono::steady_clock::now();
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::cout << argv[1] << ": load " << secs(t0, t1) << " s, " << texts.size() << " texts, " << num_bytes / 1e6
            << " MB, " << num_tokens / 2 << " tokens; encode cold " << num_bytes / 1e6 / secs(t1, t2)
            << " MB/s, warm " << num_bytes / 1e6 / secs(t2, t3) << " MB/s\n";
}
