// The inputs of one forward step over a ragged batch of sequences (prefill chunks and decodes
// mixed), and the host-side builder that uploads them with one copy per array.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace brisk {

// All views live in the backend's memory.
struct ForwardBatch {
  TensorView token_ids;       // [num_tokens] i32
  TensorView positions;       // [num_tokens] i32
  TensorView slot_mapping;    // [num_tokens] i32: KV cache slot of each token
  TensorView query_start;     // [num_seqs + 1] i32
  TensorView context_lens;    // [num_seqs] i32: KV tokens of each sequence incl. this step's
  TensorView block_tables;    // [num_seqs, max_blocks_per_seq] i32
  TensorView logits_indices;  // [num_logits] i32: token rows whose logits are wanted
  TensorView hidden_indices;  // [num_hidden] i32: token rows whose final hidden states are wanted
  int max_query_len = 0;
  int max_context_len = 0;
  // When > 0, the first num_decode_seqs sequences compute one token each and the others more: a
  // mixed step's attention then runs as two calls, each on a kernel made for its shape, the
  // second with prefill_query_start. 0: one call for the whole batch.
  int64_t num_decode_seqs = 0;
  TensorView prefill_query_start;  // [num_seqs - num_decode_seqs + 1] i32: query_start[num_decode_seqs:] - num_decode_seqs
  int64_t num_tokens() const { return token_ids.size(0); }
  int64_t num_seqs() const { return context_lens.size(0); }
};

// One sequence's part of a step: its new tokens continue `num_cached` tokens already in the
// cache; block_table lists its KV blocks in order.
struct SequenceChunk {
  std::vector<int32_t> tokens;
  int32_t num_cached = 0;
  std::vector<int32_t> block_table;
  bool want_all_logits = false;   // logits of every new token (goldens)
  bool want_last_logits = true;   // logits of the last new token (false: a partial prefill chunk)
  // New tokens [hidden_begin, hidden_end) whose final hidden states are wanted (prompt logprobs:
  // the caller runs the lm_head over them in slices).
  int32_t hidden_begin = 0;
  int32_t hidden_end = 0;
};

// Host arrays of a step, built from chunks, uploaded into tensors the inputs own. Chunks of one
// token placed first make a mixed step's attention split (ForwardBatch::num_decode_seqs).
class BatchInputs {
 public:
  BatchInputs(const std::vector<SequenceChunk>& chunks, int block_size);
  // Uploads into the backend's memory; the returned views stay valid while this object lives.
  ForwardBatch upload(Backend& backend);
  int64_t num_logits() const { return static_cast<int64_t>(logits_indices_.size()); }
  int64_t num_hidden() const { return static_cast<int64_t>(hidden_indices_.size()); }

 private:
  std::vector<int32_t> token_ids_, positions_, slot_mapping_, query_start_, context_lens_,
      block_tables_, logits_indices_, hidden_indices_, prefill_query_start_;
  int64_t num_decode_seqs_ = 0;
  int64_t max_blocks_per_seq_ = 0;
  int max_query_len_ = 0;
  int max_context_len_ = 0;
  std::vector<Tensor> device_;
};

}  // namespace brisk
