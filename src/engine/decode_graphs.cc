#include "engine/decode_graphs.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "core/error.h"

namespace brisk {

std::unique_ptr<DecodeGraphs> DecodeGraphs::create(LlamaModel& model, KvCache& cache, int64_t max_num_seqs) {
  std::unique_ptr<DecodeGraphs> graphs(new DecodeGraphs(model, cache, max_num_seqs));
  // Every bucket is recorded now, on padding inputs (they write no KV), so that no step waits for
  // a recording. The first one probes: a backend without graphs records nothing.
  const auto start = std::chrono::steady_clock::now();
  for (int64_t bound : graphs->context_bounds_) {
    for (int64_t bucket : graphs->buckets_) {
      graphs->fill({}, {bucket, bound});
      if (!graphs->record({bucket, bound})) return nullptr;
    }
  }
  spdlog::info("recorded {} decode step graphs (batches of 1 to {}, {} context bounds) in {:.2f} s",
               graphs->graphs_.size(), graphs->max_seqs_, graphs->context_bounds_.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return graphs;
}

DecodeGraphs::DecodeGraphs(LlamaModel& model, KvCache& cache, int64_t max_num_seqs) : model_(model), cache_(cache) {
  for (int64_t b : {1, 2, 4, 8})
    if (b <= max_num_seqs) buckets_.push_back(b);
  for (int64_t b = 16; b < max_num_seqs + 8; b += 8) buckets_.push_back(std::min(b, max_num_seqs));
  buckets_.erase(std::unique(buckets_.begin(), buckets_.end()), buckets_.end());
  max_seqs_ = buckets_.back();
  for (int64_t bound = 1024; bound < model.max_model_len(); bound *= 4) context_bounds_.push_back(bound);
  context_bounds_.push_back(model.max_model_len());
  max_blocks_per_seq_ = (model.max_model_len() + cache.block_size() - 1) / cache.block_size();
  const int64_t sizes[kNumFields] = {max_seqs_, max_seqs_, max_seqs_, max_seqs_ + 1, max_seqs_, max_seqs_,
                                     max_seqs_ * max_blocks_per_seq_};
  for (int f = 0; f < kNumFields; ++f) offset_[f + 1] = offset_[f] + sizes[f];
  host_inputs_.resize(offset_[kNumFields]);
  Backend& backend = model.backend();
  inputs_ = Tensor(backend.allocator(), DType::kI32, {offset_[kNumFields]});
  logits_ = Tensor(backend.allocator(), DType::kF32, {max_seqs_, model.config().vocab_size});
}

int64_t DecodeGraphs::bucket_for(int64_t num_seqs) const {
  return *std::lower_bound(buckets_.begin(), buckets_.end(), num_seqs);
}

ForwardBatch DecodeGraphs::batch_for(Key key) const {
  const int64_t bucket = key.first;
  auto field = [&](Field f, Shape shape) {
    return TensorView(inputs_.data_as<int32_t>() + offset_[f], DType::kI32, shape, inputs_.view().device());
  };
  ForwardBatch batch;
  batch.token_ids = field(kTokenIds, {bucket});
  batch.positions = field(kPositions, {bucket});
  batch.slot_mapping = field(kSlots, {bucket});
  batch.query_start = field(kQueryStart, {bucket + 1});
  batch.context_lens = field(kContextLens, {bucket});
  batch.logits_indices = field(kLogitsIndices, {bucket});
  batch.block_tables = field(kBlockTables, {bucket, max_blocks_per_seq_});
  batch.max_query_len = 1;
  batch.max_context_len = static_cast<int>(key.second);
  return batch;
}

bool DecodeGraphs::covers(const std::vector<SequenceChunk>& chunks) const {
  if (chunks.empty() || static_cast<int64_t>(chunks.size()) > max_seqs_) return false;
  return std::all_of(chunks.begin(), chunks.end(), [](const SequenceChunk& c) {
    return c.tokens.size() == 1 && c.want_last_logits && !c.want_all_logits && c.hidden_begin == c.hidden_end;
  });
}

ForwardBatch DecodeGraphs::prepare(const std::vector<SequenceChunk>& chunks) {
  BRISK_ASSERT(covers(chunks));
  int64_t max_context = 0;
  for (const SequenceChunk& c : chunks) max_context = std::max<int64_t>(max_context, c.num_cached + 1);
  const int64_t bound = *std::lower_bound(context_bounds_.begin(), context_bounds_.end(), max_context);
  prepared_ = {bucket_for(static_cast<int64_t>(chunks.size())), bound};
  return fill(chunks, prepared_);
}

ForwardBatch DecodeGraphs::fill(const std::vector<SequenceChunk>& chunks, Key key) {
  const int64_t bucket = key.first;
  const int64_t num_seqs = static_cast<int64_t>(chunks.size());
  const int block_size = cache_.block_size();
  int32_t* in = host_inputs_.data();
  for (int64_t s = 0; s < bucket; ++s) {
    const bool real = s < num_seqs;
    const int32_t pos = real ? chunks[s].num_cached : 0;
    in[offset_[kTokenIds] + s] = real ? chunks[s].tokens[0] : 0;
    in[offset_[kPositions] + s] = pos;
    in[offset_[kSlots] + s] = real ? chunks[s].block_table[pos / block_size] * block_size + pos % block_size : -1;
    in[offset_[kContextLens] + s] = pos + 1;
    in[offset_[kLogitsIndices] + s] = static_cast<int32_t>(s);
    int32_t* table = in + offset_[kBlockTables] + s * max_blocks_per_seq_;
    const int64_t num_blocks = real ? static_cast<int64_t>(chunks[s].block_table.size()) : 0;
    BRISK_CHECK(num_blocks <= max_blocks_per_seq_, "decode step: sequence {} has {} KV blocks, more than the "
                "model's context of {} tokens allows", s, num_blocks, model_.max_model_len());
    std::copy_n(real ? chunks[s].block_table.data() : nullptr, num_blocks, table);
    std::fill(table + num_blocks, table + max_blocks_per_seq_, 0);
  }
  for (int64_t s = 0; s <= bucket; ++s) in[offset_[kQueryStart] + s] = static_cast<int32_t>(s);
  // One copy of everything up to the bucket's last block table row.
  const int64_t used = offset_[kBlockTables] + bucket * max_blocks_per_seq_;
  Backend& backend = model_.backend();
  backend.copy(inputs_.view().slice(0, 0, used), TensorView(host_inputs_.data(), DType::kI32, {used}));
  return batch_for(key);
}

bool DecodeGraphs::record(Key key) {
  const ForwardBatch batch = batch_for(key);
  TensorView logits = logits_.view().slice(0, 0, key.first);
  graphs_[key] = model_.backend().record_graph([&] { model_.forward(batch, cache_, logits); });
  return graphs_[key] != nullptr;
}

TensorView DecodeGraphs::replay(int64_t num_seqs) {
  BRISK_ASSERT(num_seqs <= prepared_.first);
  graphs_.at(prepared_)->replay();
  return logits_.view().slice(0, 0, num_seqs);
}

}  // namespace brisk
