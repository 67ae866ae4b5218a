#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <thread>

namespace brisk::grammar {

CompiledGrammar::CompiledGrammar(const Grammar& grammar, std::shared_ptr<const TokenVocab> vocab)
    : byte_grammar_(ByteGrammar::lower(grammar)),
      vocab_(std::move(vocab)),
      cache_(std::make_unique<TokenMaskCache>(byte_grammar_, *vocab_)) {}

size_t CompiledGrammar::precompute(std::chrono::milliseconds budget) const {
  // A bound on the positions keeps grammars whose shared rules branch at every level finite.
  constexpr size_t kMaxPositions = 20000;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  const std::vector<GrammarPosition> positions = reachable_positions(byte_grammar_, kMaxContextDepth, kMaxPositions);
  // Half the machine's threads: the engine's steps and other requests go on meanwhile.
  cache_->precompute(positions, int(std::max(1u, std::thread::hardware_concurrency() / 2)), deadline);
  return cache_->num_entries();
}

}  // namespace brisk::grammar
