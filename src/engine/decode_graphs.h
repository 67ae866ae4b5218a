// Pure decode steps (every sequence computes one new token and samples) replayed from recorded
// graphs, one per batch-size bucket (1, 2, 4, 8, then multiples of 8) and context bound (1024,
// then 4x larger, up to the model's maximum), all recorded at start-up. The context bound is the
// attention's max_context_len: its kernel and split count fit the bound, so short contexts do not
// run a kernel made for the longest. A step of b sequences runs in the smallest bucket >= b; the padding rows
// write no KV (slot -1) and their logits are ignored. Graphs read their inputs from one fixed
// device buffer, refilled by one host-to-device copy per step, and attention is recorded with
// the model's maximum context as its upper bound, so any context length replays correctly.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"

namespace brisk {

class DecodeGraphs {
 public:
  // Null when the backend cannot record graphs (the CPU).
  static std::unique_ptr<DecodeGraphs> create(LlamaModel& model, KvCache& cache, int64_t max_num_seqs);

  // Whether the step is a pure decode step that fits the largest bucket.
  bool covers(const std::vector<SequenceChunk>& chunks) const;
  // Fills the graph inputs with the step's; returns the batch view of them that the graph reads
  // (its token ids may still be changed on the device before replay).
  ForwardBatch prepare(const std::vector<SequenceChunk>& chunks);
  // Replays the graph of the step prepared last; returns its logits, [num_seqs, vocab] f32,
  // valid until the next replay.
  TensorView replay(int64_t num_seqs);

 private:
  DecodeGraphs(LlamaModel& model, KvCache& cache, int64_t max_num_seqs);
  // A graph's batch-size bucket and context bound.
  using Key = std::pair<int64_t, int64_t>;
  int64_t bucket_for(int64_t num_seqs) const;
  // Fills and uploads the inputs of the key's graph: the chunks' rows, then padding rows.
  ForwardBatch fill(const std::vector<SequenceChunk>& chunks, Key key);
  // Records the key's graph on its current inputs; false where the backend has no graphs.
  bool record(Key key);
  // The key's views into the input buffer (fixed addresses, as the graphs need).
  ForwardBatch batch_for(Key key) const;

  LlamaModel& model_;
  KvCache& cache_;
  std::vector<int64_t> buckets_;
  std::vector<int64_t> context_bounds_;
  int64_t max_seqs_;           // the largest bucket
  int64_t max_blocks_per_seq_;  // block table width: the model's maximum context
  // Offsets (in i32 elements) of the input arrays inside the buffer, each sized for max_seqs_.
  enum Field { kTokenIds, kPositions, kSlots, kQueryStart, kContextLens, kLogitsIndices, kBlockTables, kNumFields };
  int64_t offset_[kNumFields + 1] = {};
  std::vector<int32_t> host_inputs_;
  Tensor inputs_;  // [offset_[kNumFields]] i32 in the backend's memory
  Tensor logits_;  // [max_seqs_, vocab] f32
  std::map<Key, std::unique_ptr<RecordedGraph>> graphs_;
  Key prepared_{0, 0};  // the graph of the step prepared last
};

}  // namespace brisk
