#include "model/forward_batch.h"

#include <algorithm>

#include "core/error.h"

namespace brisk {

BatchInputs::BatchInputs(const std::vector<SequenceChunk>& chunks, int block_size) {
  BRISK_CHECK(!chunks.empty(), "a forward batch needs at least one sequence");
  BRISK_CHECK(block_size > 0, "block_size must be positive, got {}", block_size);
  query_start_.push_back(0);
  for (const auto& c : chunks)
    max_blocks_per_seq_ = std::max<int64_t>(max_blocks_per_seq_, static_cast<int64_t>(c.block_table.size()));
  for (size_t s = 0; s < chunks.size(); ++s) {
    const SequenceChunk& c = chunks[s];
    const int32_t num_new = static_cast<int32_t>(c.tokens.size());
    const int32_t context = c.num_cached + num_new;
    BRISK_CHECK(num_new > 0, "sequence {} of the batch has no new tokens", s);
    BRISK_CHECK(static_cast<int64_t>(c.block_table.size()) * block_size >= context,
                "sequence {} needs {} KV slots but its {} blocks of {} hold fewer", s, context,
                c.block_table.size(), block_size);
    BRISK_CHECK(0 <= c.hidden_begin && c.hidden_begin <= c.hidden_end && c.hidden_end <= num_new,
                "sequence {} of the batch wants hidden states of rows [{}, {}) of its {} new tokens", s,
                c.hidden_begin, c.hidden_end, num_new);
    for (int32_t i = c.hidden_begin; i < c.hidden_end; ++i)
      hidden_indices_.push_back(static_cast<int32_t>(token_ids_.size()) + i);
    for (int32_t i = 0; i < num_new; ++i) {
      const int32_t pos = c.num_cached + i;
      token_ids_.push_back(c.tokens[i]);
      positions_.push_back(pos);
      slot_mapping_.push_back(c.block_table[pos / block_size] * block_size + pos % block_size);
      if (c.want_all_logits || (c.want_last_logits && i == num_new - 1))
        logits_indices_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
    }
    query_start_.push_back(static_cast<int32_t>(token_ids_.size()));
    context_lens_.push_back(context);
    for (int64_t b = 0; b < max_blocks_per_seq_; ++b)
      block_tables_.push_back(b < static_cast<int64_t>(c.block_table.size()) ? c.block_table[b] : 0);
    max_query_len_ = std::max(max_query_len_, num_new);
    max_context_len_ = std::max(max_context_len_, context);
  }
  const auto leading = std::find_if(chunks.begin(), chunks.end(), [](const SequenceChunk& c) { return c.tokens.size() != 1; });
  num_decode_seqs_ = leading == chunks.end() ? 0 : leading - chunks.begin();
  if (num_decode_seqs_ > 0)
    for (size_t s = num_decode_seqs_; s < query_start_.size(); ++s)
      prefill_query_start_.push_back(query_start_[s] - static_cast<int32_t>(num_decode_seqs_));
}

ForwardBatch BatchInputs::upload(Backend& backend) {
  device_.clear();
  auto put = [&](const std::vector<int32_t>& host, Shape shape) {
    return to_backend(backend, TensorView(const_cast<int32_t*>(host.data()), DType::kI32, shape), device_);
  };
  const int64_t num_tokens = static_cast<int64_t>(token_ids_.size());
  const int64_t num_seqs = static_cast<int64_t>(context_lens_.size());
  ForwardBatch batch;
  batch.token_ids = put(token_ids_, {num_tokens});
  batch.positions = put(positions_, {num_tokens});
  batch.slot_mapping = put(slot_mapping_, {num_tokens});
  batch.query_start = put(query_start_, {num_seqs + 1});
  batch.context_lens = put(context_lens_, {num_seqs});
  batch.block_tables = put(block_tables_, {num_seqs, max_blocks_per_seq_});
  batch.logits_indices = put(logits_indices_, {num_logits()});
  if (!hidden_indices_.empty()) batch.hidden_indices = put(hidden_indices_, {num_hidden()});
  batch.max_query_len = max_query_len_;
  batch.max_context_len = max_context_len_;
  batch.num_decode_seqs = num_decode_seqs_;
  if (num_decode_seqs_ > 0)
    batch.prefill_query_start = put(prefill_query_start_, {static_cast<int64_t>(prefill_query_start_.size())});
  return batch;
}

}  // namespace brisk
