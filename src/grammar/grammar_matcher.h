// The per-sequence state of constrained decoding: which tokens may come next, accepting
// them, rolling back, and the bytes the grammar forces next. Not thread-safe; many matchers
// may share one CompiledGrammar.
//
// A stop token is allowed exactly where the grammar can end; accepting it terminates the
// matcher. Special tokens are never allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/earley_parser.h"

namespace brisk::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Number of uint32 words of a bitmask: ceil(vocab_size / 32).
  int32_t bitmask_words() const { return (grammar_->vocab().vocab_size() + 31) / 32; }

  // Accepts one token; false (and no change) when the grammar does not allow it.
  bool accept_token(int32_t id);
  // Accepts raw bytes as one rollback step (tests, forced prefixes); false: no change.
  bool accept_string(std::string_view bytes);
  // Bit i of words[i / 32] is set when token i may come next. Does not change the state.
  void fill_next_token_bitmask(std::span<uint32_t> words);
  // The same mask, computed by running every token through the parser (a slow reference).
  void fill_next_token_bitmask_reference(std::span<uint32_t> words);

  bool is_terminated() const { return terminated_; }
  // True when the text so far is a complete sentence of the grammar.
  bool can_terminate() const { return !terminated_ && parser_.can_end(); }
  // Undoes the last `num_tokens` accepted tokens (stop tokens included).
  void rollback(int32_t num_tokens);
  int32_t num_accepted_tokens() const { return int32_t(step_bytes_.size()); }
  // The bytes the grammar forces next (empty when several continuations are possible).
  std::string find_jump_forward_string();
  void reset();

 private:
  bool token_accepted_now(const std::string& bytes);
  // The one byte the grammar allows next: -1 when none, 256 when several.
  int forced_next_byte();

  std::shared_ptr<const CompiledGrammar> grammar_;
  EarleyParser parser_;
  std::vector<int32_t> step_bytes_;  // bytes consumed by each accepted step; -1 for a stop token
  bool terminated_ = false;
  std::vector<int32_t> candidates_;  // scratch: uncertain tokens (sorted-vocab indices)
  std::vector<Site> context_;        // scratch
  std::vector<const PositionMask*> seen_;  // scratch
};

}  // namespace brisk::grammar
