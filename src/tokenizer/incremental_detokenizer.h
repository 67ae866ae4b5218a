// Streaming detokenization: feed ids one at a time, get the text each one makes final.
//
// Guarantees: every delta is valid UTF-8 (never half a character), and the deltas followed by
// finish() concatenate to exactly tokenizer.decode(all ids, skip_special_tokens).
//
// How: like vLLM, each step decodes a short window [prefix_offset, end) and the part of it
// already emitted [prefix_offset, read_offset), and emits the difference once it does not end
// in U+FFFD (an incomplete character that later bytes may complete). The window is decoded as
// a continuation when earlier tokens produced output, so start-of-text rules (the first
// token's leading space) apply only where they apply in the full decode. While the last id is
// a byte-fallback piece nothing is emitted: a run of byte pieces is decoded as a whole, and a
// later invalid byte would turn the whole run into U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace brisk {

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive this object.
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens);

  // Appends one id; returns the newly final text (often empty).
  std::string add(int32_t id);
  // Returns the text still held back; call once at the end of the sequence.
  std::string finish();

  const std::vector<int32_t>& ids() const { return ids_; }

 private:
  // Text of the window [prefix_offset_, end) and its already-emitted prefix up to read_offset_.
  std::string take_delta(bool final);

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
  // Some id before prefix_offset_ reaches the decoder (not skipped, known): the window
  // continues earlier text.
  bool continuation_ = false;
  // The last id that reaches the decoder is a byte-fallback piece: its run may continue.
  bool last_is_partial_ = false;
};

}  // namespace brisk
