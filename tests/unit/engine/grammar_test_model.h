// The engine tests' model for structured output: the synthetic byte-level tokenizer with random
// weights (engine_test_util.h), its vocabulary as a grammar sees it, a prompt, and engines and
// sampled requests under a grammar.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "grammar/compiled_grammar.h"
#include "tokenizer/tokenizer.h"

namespace brisk::testing {

class GrammarTestModel {
 public:
  static constexpr int32_t kEos = 1;  // <|end_of_text|>, the model's eos (synthetic_tokenizer_model_dir)

  GrammarTestModel()
      : dir_(synthetic_tokenizer_model_dir()),
        tokenizer_(Tokenizer::from_folder(dir_)),
        vocab_(std::make_shared<grammar::TokenVocab>(
            grammar::TokenVocab::from_tokenizer(*tokenizer_, std::vector<int32_t>{kEos}))),
        prompt_(tokenizer_->encode("Answer in the format asked for:", false)) {}

  // An engine over the model, with random weights and a cache of 256 blocks of 4 tokens.
  std::unique_ptr<Engine> engine(EngineOptions options = {}) const {
    options.model_dir = dir_.string();
    options.dummy_weights = true;
    options.num_kv_blocks = 256;
    options.block_size = 4;
    return Engine::create(options);
  }
  std::shared_ptr<const grammar::CompiledGrammar> compile(const grammar::Grammar& g) const {
    return std::make_shared<grammar::CompiledGrammar>(g, vocab_);
  }
  // The prompt, sampled at temperature 1 with `seed` under `g`.
  GenerationRequest request(std::shared_ptr<const grammar::CompiledGrammar> g, uint64_t seed,
                            int64_t max_tokens = 64) const {
    GenerationRequest r{prompt_, {}};
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sampling.max_tokens = max_tokens;
    r.sampling.grammar = std::move(g);
    return r;
  }

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const grammar::TokenVocab& vocab() const { return *vocab_; }
  const std::vector<int32_t>& prompt() const { return prompt_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<const grammar::TokenVocab> vocab_;
  std::vector<int32_t> prompt_;
};

}  // namespace brisk::testing
