// The grammars of structured-output requests compiled against the served model's vocabulary: the
// TokenVocab (the tokenizer's tokens, the engine's EOS ids as stop tokens) is built once, on the
// first constrained request, and the CompiledGrammars of the most recently used constraints are
// kept (LRU, keyed by OutputConstraint::key) so that requests with the same schema share one
// token-mask cache. A grammar's cache is filled when it is compiled (CompiledGrammar::
// precompute, within its default budget), in the request's own thread: the request waits for it,
// as vLLM's wait for their grammar, while the engine's batch goes on without computing new
// positions inside its steps. Requests that ask for a constraint being compiled wait for that
// compile. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/token_vocab.h"
#include "server/output_constraint.h"
#include "tokenizer/tokenizer.h"

namespace brisk::server {

class CompiledGrammarCache {
 public:
  // Each compiled grammar holds a token-mask cache that grows with the grammar positions its
  // requests visit: their number is bounded.
  static constexpr size_t kDefaultCapacity = 64;

  // `tokenizer` must outlive the cache; `stop_ids`: the engine's EOS ids.
  CompiledGrammarCache(const Tokenizer& tokenizer, std::vector<int32_t> stop_ids,
                       size_t capacity = kDefaultCapacity);

  std::shared_ptr<const grammar::CompiledGrammar> get(const OutputConstraint& constraint);

  size_t size() const;

 private:
  std::shared_ptr<const grammar::TokenVocab> vocab();

  const Tokenizer& tokenizer_;
  const std::vector<int32_t> stop_ids_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::shared_ptr<const grammar::TokenVocab> vocab_;  // built on first use
  using Entry = std::pair<std::string, std::shared_ptr<const grammar::CompiledGrammar>>;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  // Constraints being compiled, by key: their requests wait for the one compile.
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<const grammar::CompiledGrammar>>> compiling_;
};

}  // namespace brisk::server
