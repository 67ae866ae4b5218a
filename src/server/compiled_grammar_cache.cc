#include "server/compiled_grammar_cache.h"

namespace brisk::server {

CompiledGrammarCache::CompiledGrammarCache(const Tokenizer& tokenizer, std::vector<int32_t> stop_ids, size_t capacity)
    : tokenizer_(tokenizer), stop_ids_(std::move(stop_ids)), capacity_(capacity) {}

std::shared_ptr<const grammar::TokenVocab> CompiledGrammarCache::vocab() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!vocab_)
    vocab_ = std::make_shared<const grammar::TokenVocab>(grammar::TokenVocab::from_tokenizer(tokenizer_, stop_ids_));
  return vocab_;
}

std::shared_ptr<const grammar::CompiledGrammar> CompiledGrammarCache::get(const OutputConstraint& constraint) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(constraint.key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compiled outside the lock: other requests go on meanwhile. Two requests that race to compile
  // the same constraint both do; the first one stored is kept.
  auto compiled = std::make_shared<const grammar::CompiledGrammar>(*constraint.grammar, vocab());
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(constraint.key); it != index_.end()) return it->second->second;
  lru_.emplace_front(constraint.key, compiled);
  index_[constraint.key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t CompiledGrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

}  // namespace brisk::server
