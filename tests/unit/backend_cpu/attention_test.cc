// Paged attention against a dense double-precision reference: each sequence's K/V is built
// densely, scattered into randomly permuted cache blocks (the rest of the cache is NaN, so a
// read outside a sequence's context poisons the result), and compared row by row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::make_i32;
using testing::to_doubles;

struct SeqSpec {
  int context_len;
  int query_len;
};

struct AttentionCase {
  int num_heads, num_kv_heads, head_dim, block_size, sliding_window;
  DType q_dtype, cache_dtype, out_dtype;
  std::vector<SeqSpec> seqs;
};

// Mixed batch: a decode, a full prefill with a partial last block, a chunk continuing earlier
// context, a prefill of exactly whole blocks, a single-token prompt and a long decode.
const std::vector<SeqSpec> kMixedBatch = {{20, 1}, {13, 13}, {37, 5}, {16, 16}, {1, 1}, {50, 1}};

struct AttentionInputs {
  Tensor q_wide;  // [num_tokens, num_heads * head_dim + 8]: q is a strided slice of it
  TensorView q;   // [num_tokens, num_heads * head_dim]
  Tensor k_cache, v_cache;  // [num_blocks, num_kv_heads, block_size, head_dim]
  Tensor block_tables, query_start, context_lens;
  std::vector<std::vector<double>> dense_k, dense_v;  // per seq: [context_len, kv_heads, head_dim]
  int max_query_len = 0, max_context_len = 0;
};

AttentionInputs build_inputs(const AttentionCase& c, std::mt19937& rng) {
  AttentionInputs in;
  const int num_seqs = static_cast<int>(c.seqs.size());
  const int kv_width = c.num_kv_heads * c.head_dim;
  int num_tokens = 0, max_blocks = 0, used_blocks = 0;
  for (const SeqSpec& s : c.seqs) {
    num_tokens += s.query_len;
    int blocks = (s.context_len + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, blocks + 1);  // one spare column of garbage entries
    used_blocks += blocks;
    in.max_query_len = std::max(in.max_query_len, s.query_len);
    in.max_context_len = std::max(in.max_context_len, s.context_len);
  }
  const int num_blocks = used_blocks + 3;  // a few blocks nobody owns
  std::vector<int32_t> free_blocks(num_blocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);

  const Shape cache_shape = {num_blocks, c.num_kv_heads, c.block_size, c.head_dim};
  std::vector<double> nan_fill(cache_shape.num_elements(), std::numeric_limits<double>::quiet_NaN());
  std::vector<double> k_values = nan_fill, v_values = nan_fill;
  std::vector<int32_t> tables(num_seqs * max_blocks, -1), starts = {0}, lens;
  size_t next_free = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const SeqSpec& spec = c.seqs[s];
    // Dense K/V rounded to the cache dtype, so the reference sees exactly the stored values.
    Tensor k = testing::random_tensor(c.cache_dtype, {spec.context_len, kv_width}, rng);
    Tensor v = testing::random_tensor(c.cache_dtype, {spec.context_len, kv_width}, rng);
    in.dense_k.push_back(to_doubles(k));
    in.dense_v.push_back(to_doubles(v));
    for (int j = 0; j < spec.context_len; ++j) {
      if (j % c.block_size == 0) tables[s * max_blocks + j / c.block_size] = free_blocks[next_free++];
      const int block = tables[s * max_blocks + j / c.block_size];
      for (int g = 0; g < c.num_kv_heads; ++g) {
        for (int d = 0; d < c.head_dim; ++d) {
          int64_t index = ((int64_t{block} * c.num_kv_heads + g) * c.block_size + j % c.block_size) *
                              c.head_dim + d;
          k_values[index] = in.dense_k[s][j * kv_width + g * c.head_dim + d];
          v_values[index] = in.dense_v[s][j * kv_width + g * c.head_dim + d];
        }
      }
    }
    starts.push_back(starts.back() + spec.query_len);
    lens.push_back(spec.context_len);
  }
  const int width = c.num_heads * c.head_dim;
  in.q_wide = testing::random_tensor(c.q_dtype, {num_tokens, width + 8}, rng, -2.0, 2.0);
  in.q = in.q_wide.view().slice(1, 4, 4 + width);
  in.k_cache = testing::make_tensor(c.cache_dtype, cache_shape, k_values);
  in.v_cache = testing::make_tensor(c.cache_dtype, cache_shape, v_values);
  in.block_tables = make_i32({num_seqs, max_blocks}, tables);
  in.query_start = make_i32({num_seqs + 1}, starts);
  in.context_lens = make_i32({num_seqs}, lens);
  return in;
}

std::vector<double> reference(const AttentionCase& c, const AttentionInputs& in, double scale) {
  const int width = c.num_heads * c.head_dim;
  const int kv_width = c.num_kv_heads * c.head_dim;
  const int group = c.num_heads / c.num_kv_heads;
  std::vector<double> q = to_doubles(in.q), out;
  int row = 0;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const SeqSpec& spec = c.seqs[s];
    for (int i = 0; i < spec.query_len; ++i, ++row) {
      const int pos = spec.context_len - spec.query_len + i;
      const int first = c.sliding_window > 0 ? std::max(0, pos - c.sliding_window + 1) : 0;
      for (int h = 0; h < c.num_heads; ++h) {
        const int g = h / group;
        std::vector<double> scores;
        for (int j = first; j <= pos; ++j) {
          double dot = 0;
          for (int d = 0; d < c.head_dim; ++d) {
            dot += q[row * width + h * c.head_dim + d] * in.dense_k[s][j * kv_width + g * c.head_dim + d];
          }
          scores.push_back(dot * scale);
        }
        double max_score = *std::max_element(scores.begin(), scores.end()), sum = 0;
        for (double& x : scores) sum += (x = std::exp(x - max_score));
        for (int d = 0; d < c.head_dim; ++d) {
          double acc = 0;
          for (int j = first; j <= pos; ++j) {
            acc += scores[j - first] * in.dense_v[s][j * kv_width + g * c.head_dim + d];
          }
          out.push_back(acc / sum);
        }
      }
    }
  }
  return out;
}

AttentionParams make_params(const AttentionCase& c, const AttentionInputs& in, TensorView out) {
  return {.q = in.q, .k_cache = in.k_cache, .v_cache = in.v_cache, .block_tables = in.block_tables,
          .query_start = in.query_start, .context_lens = in.context_lens, .out = out,
          .num_heads = c.num_heads, .num_kv_heads = c.num_kv_heads, .head_dim = c.head_dim,
          .scale = static_cast<float>(1.0 / std::sqrt(c.head_dim)),
          .sliding_window = c.sliding_window, .max_query_len = in.max_query_len,
          .max_context_len = in.max_context_len};
}

void check_attention(const AttentionCase& c, std::mt19937& rng) {
  auto backend = make_cpu_backend();
  AttentionInputs in = build_inputs(c, rng);
  Tensor out(cpu_allocator(), c.out_dtype, {in.q.size(0), in.q.size(1)});
  AttentionParams p = make_params(c, in, out);
  backend->attention(p);
  std::string what = "attention heads " + std::to_string(c.num_heads) + "/" +
                     std::to_string(c.num_kv_heads) + " head_dim " + std::to_string(c.head_dim) +
                     " block " + std::to_string(c.block_size) + " window " +
                     std::to_string(c.sliding_window) + " q " + testing::dtype_str(c.q_dtype) +
                     " cache " + testing::dtype_str(c.cache_dtype) + " out " +
                     testing::dtype_str(c.out_dtype);
  // Outputs are convex combinations of values in [-1, 1]: fp32 softmax and sums stay within
  // ~1e-6 absolute; the output dtype adds its own rounding.
  testing::expect_close(to_doubles(out), reference(c, in, p.scale), 2e-6,
                        testing::rounding_tolerance(c.out_dtype), what);
}

TEST(CpuAttention, GroupSizesHeadDimsAndWindowsMatchDenseReference) {
  std::mt19937 rng(41);
  for (int head_dim : {64, 128}) {
    for (int num_kv_heads : {8, 4, 2, 1}) {  // group sizes 1, 2, 4, 8
      for (int window : {0, 6}) {
        check_attention({8, num_kv_heads, head_dim, 16, window, DType::kF32, DType::kF32,
                         DType::kF32, kMixedBatch}, rng);
      }
    }
  }
}

TEST(CpuAttention, SmallBlocksAndMixedDtypes) {
  std::mt19937 rng(42);
  check_attention({4, 2, 64, 4, 0, DType::kBF16, DType::kBF16, DType::kBF16, kMixedBatch}, rng);
  check_attention({4, 1, 64, 4, 3, DType::kF32, DType::kF16, DType::kF32, kMixedBatch}, rng);
  check_attention({8, 2, 128, 5, 0, DType::kF16, DType::kBF16, DType::kF32, kMixedBatch}, rng);
  // A window wider than every context behaves like no window.
  check_attention({2, 2, 64, 8, 1000, DType::kF32, DType::kF32, DType::kF32, kMixedBatch}, rng);
}

// A sequence's rows are the same bits alone as in a batch, and the same whether its prompt ran
// in one piece or as chunks over cached context (the CPU backend's batch-invariance guarantee).
TEST(CpuAttention, RowsDoNotDependOnBatchOrChunking) {
  std::mt19937 rng(43);
  auto backend = make_cpu_backend();
  AttentionCase c{8, 2, 64, 16, 0, DType::kF32, DType::kF32, DType::kF32, {{30, 30}}};
  AttentionInputs in = build_inputs(c, rng);
  Tensor full(cpu_allocator(), DType::kF32, {30, 8 * 64});
  backend->attention(make_params(c, in, full));
  std::vector<double> whole = to_doubles(full);

  // The same cache, as a batch of two copies of the sequence: rows 0..11 as a chunk at
  // context 12, rows 12..29 as the following chunk at context 30.
  Tensor tables = make_i32({2, 3}, {0, 0, 0, 0, 0, 0});
  std::copy_n(in.block_tables.data_as<int32_t>(), 3, tables.data_as<int32_t>());
  std::copy_n(in.block_tables.data_as<int32_t>(), 3, tables.data_as<int32_t>() + 3);
  AttentionCase chunked = c;
  chunked.seqs = {{12, 12}, {30, 18}};
  AttentionParams p = make_params(chunked, in, full);
  Tensor starts = make_i32({3}, {0, 12, 30});
  Tensor lens = make_i32({2}, {12, 30});
  p.block_tables = tables;
  p.query_start = starts;
  p.context_lens = lens;
  Tensor out(cpu_allocator(), DType::kF32, {30, 8 * 64});
  p.out = out;
  backend->attention(p);
  EXPECT_EQ(to_doubles(out), whole);
}

TEST(CpuAttention, RejectsBadParams) {
  std::mt19937 rng(44);
  auto backend = make_cpu_backend();
  AttentionCase c{4, 2, 64, 4, 0, DType::kF32, DType::kF32, DType::kF32, {{7, 3}, {5, 5}}};
  AttentionInputs in = build_inputs(c, rng);
  Tensor out(cpu_allocator(), DType::kF32, {8, 4 * 64});
  AttentionParams good = make_params(c, in, out);
  backend->attention(good);

  AttentionParams p = good;
  Tensor tables = make_i32({2, 3}, {0, 99, -1, 2, 3, -1});
  p.block_tables = tables;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "block_tables[0][1] = 99 is outside");
  p = good;
  Tensor short_lens = make_i32({2}, {2, 5});
  p.context_lens = short_lens;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "sequence 0 has context_lens 2 < its 3 query tokens");
  p = good;
  Tensor long_lens = make_i32({2}, {7, 13});
  p.context_lens = long_lens;
  p.max_context_len = 0;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "holds only 12 tokens");
  p = good;
  p.max_context_len = 6;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "max_context_len is 6");
  p = good;
  Tensor bad_starts = make_i32({3}, {0, 3, 7});
  p.query_start = bad_starts;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "query_start must run from 0 to num_tokens 8");
  p = good;
  p.num_kv_heads = 3;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "num_heads (4) must be a positive multiple of num_kv_heads (3)");
  p = good;
  p.head_dim = 32;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "q is f32[8, 256] (cpu) but num_heads 4 * head_dim 32");
  p = good;
  Tensor bf16_tables(cpu_allocator(), DType::kBF16, {2, 3});
  p.block_tables = bf16_tables;
  EXPECT_ERROR_CONTAINS(backend->attention(p), "block_tables is bf16[2, 3] (cpu) but must be i32");
}

}  // namespace
}  // namespace brisk
