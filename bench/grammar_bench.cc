// Token-mask latency of brisk's grammar engine: for every JSON schema of the corpus
// (tests/data/grammar/corpus.json), seeded random walks of allowed tokens; prints p50/p99/max
// of fill_next_token_bitmask per step, for warm steps (every grammar position already in the
// mask cache, xgrammar's compiled state) and for all steps (first touches included).
// Usage: grammar_bench [TOKENIZER_DIR] [corpus.json] [walks per schema] [steps per walk] [compact]
//        [precompute]
// ("compact": JSON schemas with compact separators, as with disable_any_whitespace; "precompute":
// each grammar's reachable positions computed when it is compiled, as the server does, timed
// apart from the walks).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_converter.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"

using namespace brisk::grammar;
using Clock = std::chrono::steady_clock;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_dir = argc > 1 ? argv[1] : "../shared/testdata/tokenizers/qwen2";
  std::string corpus_path = argc > 2 ? argv[2] : "tests/data/grammar/corpus.json";
  int num_walks = argc > 3 ? std::stoi(argv[3]) : 4;
  int num_steps = argc > 4 ? std::stoi(argv[4]) : 48;
  const JsonSchemaOptions options{.any_whitespace = !(argc > 5 && std::string(argv[5]) == "compact")};
  const bool precompute = argc > 6 && std::string(argv[6]) == "precompute";
  std::ifstream in(corpus_path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto corpus = nlohmann::ordered_json::parse(ss.str());
  auto tokenizer = brisk::Tokenizer::from_folder(tokenizer_dir);
  auto t0 = Clock::now();
  auto vocab = std::make_shared<const TokenVocab>(TokenVocab::from_tokenizer(*tokenizer));
  double vocab_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

  std::vector<double> warm_us, all_us;
  double first_touch_ms = 0, precompute_ms = 0;
  size_t num_precomputed = 0;
  int num_schemas = 0;
  for (const auto& c : corpus) {
    if (c["kind"] != "json_schema") continue;
    ++num_schemas;
    auto compiled = std::make_shared<const CompiledGrammar>(json_schema_to_grammar(c["source"].dump(), options), vocab);
    if (precompute) {
      auto start = Clock::now();
      num_precomputed += compiled->precompute(std::chrono::minutes(10));
      precompute_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    }
    std::vector<uint32_t> words((size_t(vocab->vocab_size()) + 31) / 32);
    for (int walk = 0; walk < num_walks; ++walk) {
      std::mt19937 rng(uint32_t(walk * 7919 + num_schemas));
      GrammarMatcher matcher(compiled);
      for (int step = 0; step < num_steps && !matcher.is_terminated(); ++step) {
        size_t entries = compiled->mask_cache().num_entries();
        auto start = Clock::now();
        matcher.fill_next_token_bitmask(words);
        double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        all_us.push_back(us);
        if (compiled->mask_cache().num_entries() == entries) {
          warm_us.push_back(us);
          if (us > 1000 && std::getenv("GRAMMAR_BENCH_VERBOSE")) {
            std::cout << fmt::format("  slow warm step: {} walk {} step {}: {:.0f} us\n", c["name"].get<std::string>(),
                                     walk, step, us);
          }
        } else {
          first_touch_ms += us / 1000;
        }
        std::vector<int32_t> allowed, short_allowed;
        for (int32_t id = 0; id < vocab->vocab_size(); ++id) {
          if (!(words[id >> 5] & (1u << (id & 31)))) continue;
          allowed.push_back(id);
          if (vocab->token_bytes(id).size() <= 2) short_allowed.push_back(id);
        }
        if (allowed.empty()) break;
        const auto& pool = (!short_allowed.empty() && rng() % 10 < 6) ? short_allowed : allowed;
        matcher.accept_token(pool[rng() % pool.size()]);
      }
    }
  }
  std::cout << fmt::format(
      "{}: vocab {} tokens ({:.0f} ms to decode and sort); {} JSON schemas x {} walks\n"
      "  warm steps: {} steps, p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us\n"
      "  all steps:  {} steps, p50 {:.1f} us, p99 {:.1f} us (first touches of grammar positions: {:.0f} ms in all)\n",
      tokenizer_dir, vocab->vocab_size(), vocab_ms, num_schemas, num_walks, warm_us.size(), percentile(warm_us, 0.5),
      percentile(warm_us, 0.99), warm_us.empty() ? 0 : *std::max_element(warm_us.begin(), warm_us.end()),
      all_us.size(), percentile(all_us, 0.5), percentile(all_us, 0.99), first_touch_ms);
  if (precompute)
    std::cout << fmt::format("  precomputed: {} positions in {:.0f} ms\n", num_precomputed, precompute_ms);
}
