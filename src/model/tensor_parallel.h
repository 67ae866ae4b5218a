// Tensor parallelism (Megatron sharding): each rank of a group holds a share of every layer and
// the ranks exchange activations twice per layer.
//   q / k / v and gate / up are split by output features (columns of the product) in whole
//     heads and whole intermediate ranges: rank r computes its heads' attention and its share of
//     SiLU(gate) * up with no exchange;
//   o_proj and down are split by input features (rows of the product): each rank's product is a
//     partial sum, all-reduced (Communicator::all_reduce_sum) before the residual add;
//   the embedding and lm_head are split by vocabulary: a rank embeds the ids of its rows (zero
//     rows elsewhere, all-reduced) and computes the logits of its rows (all-gathered).
// Where a model has fewer KV heads than ranks, each rank holds the one KV head its query heads
// use (vLLM does the same): the KV cache then repeats heads across ranks.
#pragma once

#include <cstdint>

#include "backend/communicator.h"
#include "model/model_config.h"

namespace brisk {

struct TensorParallel {
  int rank = 0;
  int size = 1;
  // Needed when size > 1; with one rank it may still be given (the collectives then run, as a
  // test of a communicator's path through the model).
  Communicator* comm = nullptr;
};

// The part of a model one rank holds.
struct ModelShard {
  int64_t first_head = 0, num_heads = 0;        // query heads
  int64_t first_kv_head = 0, num_kv_heads = 0;  // KV heads
  int64_t first_intermediate = 0, intermediate_size = 0;
  int64_t first_vocab = 0, vocab_size = 0;
};

// Rank `rank` of `size`'s shard; throws kInvalidArgument naming --tensor-parallel-size and the
// config field that does not divide (heads, KV heads, intermediate size, vocabulary, int4 groups,
// FP8 blocks).
ModelShard model_shard(const ModelConfig& c, int rank, int size);

// c with the shard's head counts, intermediate size and vocabulary: the shapes of a rank's
// weights, activations and KV cache.
ModelConfig shard_config(const ModelConfig& c, const ModelShard& s);

}  // namespace brisk
