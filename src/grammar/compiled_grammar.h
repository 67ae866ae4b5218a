// A grammar bound to a vocabulary: the lowered grammar, the vocabulary's token bytes and the
// token-mask cache that all matchers of this grammar share (thread-safe).
#pragma once

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

 private:
  ByteGrammar byte_grammar_;
  std::shared_ptr<const TokenVocab> vocab_;
  std::unique_ptr<TokenMaskCache> cache_;
};

}  // namespace brisk::grammar
