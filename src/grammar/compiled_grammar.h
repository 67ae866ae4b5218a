// A grammar bound to a vocabulary: the lowered grammar, the vocabulary's token bytes and the
// token-mask cache that all matchers of this grammar share (thread-safe).
#pragma once

#include <chrono>
#include <memory>

#include "grammar/byte_grammar.h"
#include "grammar/grammar.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_vocab.h"

namespace brisk::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(const Grammar& grammar, std::shared_ptr<const TokenVocab> vocab);
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const ByteGrammar& byte_grammar() const { return byte_grammar_; }
  const TokenVocab& vocab() const { return *vocab_; }
  TokenMaskCache& mask_cache() const { return *cache_; }
  // Fills the mask cache with the positions a matcher can reach (grammar_positions.h), over half
  // the machine's threads, for at most `budget` (positions left over are computed when first
  // reached); returns how many entries it holds then. Matchers then find most positions computed
  // instead of computing them inside a decoding step.
  static constexpr std::chrono::milliseconds kDefaultPrecomputeBudget{2000};
  size_t precompute(std::chrono::milliseconds budget = kDefaultPrecomputeBudget) const;

 private:
  ByteGrammar byte_grammar_;
  std::shared_ptr<const TokenVocab> vocab_;
  std::unique_ptr<TokenMaskCache> cache_;
};

}  // namespace brisk::grammar
