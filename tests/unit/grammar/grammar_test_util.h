// Helpers shared by the grammar tests: the shared tokenizers as grammar vocabularies, masks as
// id lists, and the order-free mask hash of tools/make_grammar_goldens.py.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace brisk::grammar::testing {

inline std::filesystem::path tokenizer_dir(const std::string& name) {
  return ::brisk::testing::shared_testdata_dir() / "tokenizers" / name;
}

// The vocabulary of a shared tokenizer, loaded once per process.
inline std::shared_ptr<const TokenVocab> shared_vocab(const std::string& name,
                                                      std::optional<std::vector<int32_t>> stop_ids = std::nullopt) {
  static std::map<std::string, std::shared_ptr<const TokenVocab>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto tokenizer = Tokenizer::from_folder(tokenizer_dir(name));
  auto vocab = std::make_shared<const TokenVocab>(TokenVocab::from_tokenizer(*tokenizer, stop_ids));
  cache[name] = vocab;
  return vocab;
}

inline std::vector<int32_t> mask_ids(const std::vector<uint32_t>& words, int32_t vocab_size) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (words[id >> 5] & (1u << (id & 31))) ids.push_back(id);
  }
  return ids;
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t mask_hash(const std::vector<int32_t>& ids) {
  uint64_t h = 0;
  for (int32_t id : ids) h += splitmix64(uint64_t(id));
  return h;
}

// FNV-1a over (id, kind, length, bytes) of every token, as the golden tool computes it.
inline uint64_t vocab_digest(const TokenVocab& vocab) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto feed = [&](const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  };
  for (int32_t id = 0; id < vocab.vocab_size(); ++id) {
    uint8_t kind = vocab.is_stop(id) ? 2 : vocab.is_special(id) ? 1 : 0;
    const std::string empty;
    const std::string& bytes = kind ? empty : vocab.token_bytes(id);
    uint32_t le_id = uint32_t(id), le_len = uint32_t(bytes.size());
    feed(&le_id, 4);
    feed(&kind, 1);
    feed(&le_len, 4);
    feed(bytes.data(), bytes.size());
  }
  return h;
}

}  // namespace brisk::grammar::testing
