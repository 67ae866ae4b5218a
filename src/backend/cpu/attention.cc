// Causal (optionally sliding-window) attention of each sequence's new tokens over its paged KV
// cache (dequantized as KvQuant says), with grouped-query heads. Each (token, head) pair is
// computed independently with a two-pass softmax in fp32 (scores, max, exp, sum, weighted sum of
// v), so a row's result does not depend on the batch it was in or on how its prompt was chunked.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "backend/cpu/kv_quant.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace {

// The sequence each query row belongs to, after checking the ragged layout and block tables.
std::vector<int32_t> check_sequences(const AttentionParams& p) {
  const int64_t num_tokens = p.q.size(0);
  const int64_t num_seqs = p.block_tables.size(0);
  const int64_t blocks_per_seq = p.block_tables.size(1);
  const int64_t num_blocks = p.k_cache.size(0);
  const int64_t block_size = p.k_cache.size(2);
  const int32_t* query_start = p.query_start.data_as<const int32_t>();
  const int32_t* context_lens = p.context_lens.data_as<const int32_t>();
  const int32_t* block_tables = p.block_tables.data_as<const int32_t>();
  BRISK_CHECK(query_start[0] == 0 && query_start[num_seqs] == num_tokens,
              "attention: query_start must run from 0 to num_tokens {} but is [{} .. {}]",
              num_tokens, query_start[0], query_start[num_seqs]);
  std::vector<int32_t> token_seq(num_tokens);
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t q_len = int64_t{query_start[s + 1]} - query_start[s];
    const int64_t context_len = context_lens[s];
    BRISK_CHECK(q_len >= 0, "attention: query_start[{}] = {} > query_start[{}] = {}", s,
                query_start[s], s + 1, query_start[s + 1]);
    BRISK_CHECK(context_len >= q_len,
                "attention: sequence {} has context_lens {} < its {} query tokens", s,
                context_len, q_len);
    BRISK_CHECK(blocks_per_seq * block_size >= context_len,
                "attention: sequence {} has context_lens {} but block_tables {} with block_size {} "
                "holds only {} tokens", s, context_len, p.block_tables.describe(), block_size,
                blocks_per_seq * block_size);
    BRISK_CHECK(p.max_query_len <= 0 || q_len <= p.max_query_len,
                "attention: sequence {} has {} query tokens but max_query_len is {}", s, q_len,
                p.max_query_len);
    BRISK_CHECK(p.max_context_len <= 0 || context_len <= p.max_context_len,
                "attention: sequence {} has context_lens {} but max_context_len is {}", s,
                context_len, p.max_context_len);
    const int64_t used_blocks = (context_len + block_size - 1) / block_size;
    for (int64_t b = 0; b < used_blocks; ++b) {
      const int32_t block = block_tables[s * blocks_per_seq + b];
      BRISK_CHECK(block >= 0 && block < num_blocks,
                  "attention: block_tables[{}][{}] = {} is outside the cache's {} blocks", s, b,
                  block, num_blocks);
    }
    std::fill(token_seq.begin() + query_start[s], token_seq.begin() + query_start[s + 1], s);
  }
  return token_seq;
}

}  // namespace

void attention(const AttentionParams& p) {
  check_op_params(p, Device::kCpu);
  const std::vector<int32_t> token_seq = check_sequences(p);
  const int64_t num_tokens = p.q.size(0);
  const int64_t num_heads = p.num_heads;
  const int64_t head_dim = p.head_dim;
  const int64_t group_size = p.num_heads / p.num_kv_heads;
  const int64_t blocks_per_seq = p.block_tables.size(1);
  const int64_t block_size = p.k_cache.size(2);
  const int32_t* query_start = p.query_start.data_as<const int32_t>();
  const int32_t* context_lens = p.context_lens.data_as<const int32_t>();
  const int32_t* block_tables = p.block_tables.data_as<const int32_t>();
  LoadFn load_q = load_fn(p.q.dtype());
  const KvQuant quant = p.kv_quant.kind;
  LoadFn load_k = quant == KvQuant::kNone ? load_fn(p.k_cache.dtype()) : nullptr;
  LoadFn load_v = quant == KvQuant::kNone ? load_fn(p.v_cache.dtype()) : nullptr;
  StoreFn store_out = store_fn(p.out.dtype());

  // Position j's row for kv head g in the caches of sequence s, as fp32 (in `scratch` unless the
  // cache holds fp32 values).
  auto cache_row = [&](int64_t s, int64_t g, int64_t j) {
    const int64_t block = block_tables[s * blocks_per_seq + j / block_size];
    return (block * p.num_kv_heads + g) * block_size + j % block_size;
  };
  auto load_row = [&](bool value, int64_t row, float* scratch) -> const float* {
    const TensorView& cache = value ? p.v_cache : p.k_cache;
    if (quant != KvQuant::kNone) {
      dequantize_kv_row(kv_row(cache, p.kv_quant, value, row, head_dim), head_dim, quant, scratch);
      return scratch;
    }
    return row_as_f32(static_cast<const char*>(cache.data()) + dtype_bytes(cache.dtype(), row * head_dim),
                      cache.dtype(), value ? load_v : load_k, scratch, head_dim);
  };

  parallel_for(num_tokens * num_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> q(head_dim), acc(head_dim), kv_scratch(head_dim), scores;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / num_heads;
      const int64_t h = item % num_heads;
      const int64_t g = h / group_size;
      const int64_t s = token_seq[t];
      const int64_t q_len = query_start[s + 1] - query_start[s];
      const int64_t position = context_lens[s] - q_len + (t - query_start[s]);
      const int64_t first = p.sliding_window > 0
                                ? std::max<int64_t>(0, position - p.sliding_window + 1) : 0;
      load_q(element_ptr(p.q, t, h * head_dim), q.data(), head_dim);

      scores.resize(position - first + 1);
      float max_score = -INFINITY;
      for (int64_t j = first; j <= position; ++j) {
        const float* k = load_row(false, cache_row(s, g, j), kv_scratch.data());
        scores[j - first] = dot_f32(q.data(), k, head_dim) * p.scale;
        max_score = std::max(max_score, scores[j - first]);
      }
      float sum = 0.0f;
      for (float& score : scores) {
        score = std::exp(score - max_score);
        sum += score;
      }

      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = first; j <= position; ++j) {
        const float* v = load_row(true, cache_row(s, g, j), kv_scratch.data());
        const float weight = scores[j - first];
        for (int64_t d = 0; d < head_dim; ++d) acc[d] += weight * v[d];
      }
      const float inv_sum = 1.0f / sum;
      for (float& a : acc) a *= inv_sum;
      store_out(acc.data(), element_ptr(p.out, t, h * head_dim), head_dim);
    }
  });
}

}  // namespace brisk::cpu
