#include "grammar/compiled_grammar.h"

namespace brisk::grammar {

CompiledGrammar::CompiledGrammar(const Grammar& grammar, std::shared_ptr<const TokenVocab> vocab)
    : byte_grammar_(ByteGrammar::lower(grammar)),
      vocab_(std::move(vocab)),
      cache_(std::make_unique<TokenMaskCache>(byte_grammar_, *vocab_)) {}

}  // namespace brisk::grammar
