#include "grammar/token_vocab.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"

namespace brisk::grammar {

std::string TokenVocab::decode_piece(const std::string& piece, VocabEncoding encoding) {
  switch (encoding) {
    case VocabEncoding::kRaw: return piece;
    case VocabEncoding::kByteLevel: {
      std::string out;
      return byte_level::decode(piece, out) ? out : piece;  // e.g. added tokens: kept as written
    }
    case VocabEncoding::kByteFallback: {
      int byte = byte_fallback_value(piece);
      if (byte >= 0) return std::string(1, char(byte));
      std::string out;
      static const std::string kSpace = "\xe2\x96\x81";  // U+2581 "▁"
      for (size_t i = 0; i < piece.size(); ++i) {
        if (piece.compare(i, kSpace.size(), kSpace) == 0) {
          out += ' ';
          i += kSpace.size() - 1;
        } else {
          out += piece[i];
        }
      }
      return out;
    }
  }
  return piece;
}

TokenVocab::TokenVocab(const std::vector<std::string>& pieces, VocabEncoding encoding,
                       const std::vector<bool>& special, std::vector<int32_t> stop_ids)
    : encoding_(encoding), stop_ids_(std::move(stop_ids)) {
  int32_t size = int32_t(pieces.size());
  bytes_.resize(size);
  kind_.assign(size, kNormal);
  for (int32_t id = 0; id < size; ++id) {
    bool is_special = id < int32_t(special.size()) && special[id];
    if (!is_special) bytes_[id] = decode_piece(pieces[id], encoding);
    if (is_special || bytes_[id].empty()) kind_[id] = kSpecial;
  }
  for (int32_t id : stop_ids_) {
    BRISK_CHECK(id >= 0 && id < size, "grammar: stop token id {} is outside the vocabulary of {}", id, size);
    kind_[id] = kStop;
  }
  for (int32_t id = 0; id < size; ++id) {
    if (kind_[id] == kNormal) sorted_.push_back(id);
  }
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] != bytes_[b] ? bytes_[a] < bytes_[b] : a < b;
  });
  int32_t n = int32_t(sorted_.size());
  lcp_.assign(n, 0);
  for (int32_t i = 1; i < n; ++i) {
    const std::string& a = bytes_[sorted_[i - 1]];
    const std::string& b = bytes_[sorted_[i]];
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    lcp_[i] = int32_t(k);
  }
  // subtree_end[i]: tokens after i start with token i while their lcp with their predecessor
  // stays >= its length; a stack of open prefixes finds the end in one pass.
  subtree_end_.assign(n, n);
  std::vector<int32_t> open;
  for (int32_t i = 0; i < n; ++i) {
    while (!open.empty() && lcp_[i] < int32_t(bytes_[sorted_[open.back()]].size())) {
      subtree_end_[open.back()] = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  int32_t i = 0;
  for (int b = 0; b <= 256; ++b) {
    while (i < n && uint8_t(bytes_[sorted_[i]][0]) < b) ++i;
    first_byte_begin_[b] = i;
  }
}

TokenVocab TokenVocab::from_tokenizer(const Tokenizer& tokenizer,
                                      std::optional<std::vector<int32_t>> stop_ids) {
  int32_t size = tokenizer.vocab_size();
  std::vector<std::string> pieces(size);
  std::vector<bool> special(size, false);
  for (int32_t id = 0; id < size; ++id) {
    auto piece = tokenizer.id_to_token(id);
    if (piece) pieces[id] = *piece;
    special[id] = tokenizer.is_special(id);
  }
  VocabEncoding encoding = VocabEncoding::kRaw;
  if (tokenizer.token_to_id("<0x0A>")) {
    encoding = VocabEncoding::kByteFallback;
  } else if (tokenizer.token_to_id("\xc4\xa0")) {  // "Ġ"
    encoding = VocabEncoding::kByteLevel;
  }
  std::vector<int32_t> stops;
  if (stop_ids) {
    for (int32_t id : *stop_ids)
      if (id >= 0 && id < size) stops.push_back(id);
  } else if (tokenizer.eos_token_id()) {
    stops.push_back(*tokenizer.eos_token_id());
  }
  return TokenVocab(pieces, encoding, special, std::move(stops));
}

}  // namespace brisk::grammar
