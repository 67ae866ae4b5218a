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
  std::unique_lock<std::mutex> lock(mutex_);
  if (auto it = index_.find(constraint.key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  if (auto it = compiling_.find(constraint.key); it != compiling_.end()) {
    auto pending = it->second;
    lock.unlock();
    return pending.get();  // rethrows the compile's error
  }
  std::promise<std::shared_ptr<const grammar::CompiledGrammar>> promise;
  compiling_.emplace(constraint.key, promise.get_future().share());
  lock.unlock();
  // Compiled outside the lock: other constraints are compiled and looked up meanwhile.
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
  try {
    compiled = std::make_shared<const grammar::CompiledGrammar>(*constraint.grammar, vocab());
    compiled->precompute();
  } catch (...) {
    promise.set_exception(std::current_exception());
    lock.lock();
    compiling_.erase(constraint.key);
    throw;
  }
  promise.set_value(compiled);
  lock.lock();
  compiling_.erase(constraint.key);
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
