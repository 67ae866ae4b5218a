// The decode attention kernel (kernels/decode_attention/) against the CPU reference, through the
// attention op, with the decode tolerances of attention_test_util.h: bf16 and f16 KV, head_dim
// 64 / 128 / 256, groups 1 (MHA), 2, 4, 8 (and MQA), 1 to 8 query tokens per sequence (causal
// among them), ragged context lengths from 1 to 32k with partial last blocks, block sizes 4 to
// 32 over shuffled block tables, sliding windows, a context bound far above the actual lengths
// (as under CUDA-graph capture) and the split-KV paths. The *Perf* cases time the benchmark
// shapes of issue #7 (H200: 32 / 8 heads, head_dim 128) on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attention_test_util.h"

namespace brisk::testing {
namespace {

class DecodeAttention : public ::testing::TestWithParam<DType> {};

void run_cases(DType dtype, const std::vector<AttentionCase>& cases) {
  unsigned seed = 7;
  for (const AttentionCase& c : cases) check_attention(dtype, c, seed++);
}

TEST_P(DecodeAttention, SingleToken) {
  run_cases(GetParam(), {
      // heads, kv heads, head_dim, block size, window, {q tokens, context} per sequence
      {32, 8, 128, 16, 0, {{1, 1}, {1, 15}, {1, 16}, {1, 17}, {1, 100}, {1, 1000}, {1, 4097}}},  // G 4
      {16, 2, 64, 16, 0, {{1, 1}, {1, 33}, {1, 300}, {1, 2050}}},                                 // G 8
      {4, 2, 256, 16, 0, {{1, 5}, {1, 129}, {1, 700}}},                                           // hd 256
      {8, 1, 128, 16, 0, {{1, 64}, {1, 1}, {1, 3000}}},                                           // MQA
      {4, 4, 128, 16, 0, {{1, 1}, {1, 77}, {1, 5000}}},                                           // MHA
      {8, 4, 64, 32, 0, {{1, 31}, {1, 32}, {1, 33}, {1, 999}}},                                   // bs 32
      {12, 4, 128, 8, 0, {{1, 9}, {1, 250}}},                                                      // G 3, bs 8
      {16, 8, 128, 4, 0, {{1, 3}, {1, 67}}},                                                       // bs 4
      {24, 1, 64, 16, 0, {{1, 40}, {1, 600}}},                                                    // G 24: 2 row chunks
  });
}

TEST_P(DecodeAttention, SeveralTokens) {
  run_cases(GetParam(), {
      {32, 8, 128, 16, 0, {{2, 50}, {8, 8}, {5, 1200}, {3, 3}}},  // G 4 x 8 tokens: 2 row chunks
      {16, 2, 64, 16, 0, {{8, 100}, {7, 2000}, {1, 1}}},          // G 8 x 8 tokens: 4 row chunks
      {4, 4, 128, 16, 0, {{4, 40}, {6, 3000}}},                   // MHA
      {8, 2, 256, 16, 0, {{3, 20}, {2, 333}}},                    // hd 256
  });
}

TEST_P(DecodeAttention, SlidingWindow) {
  run_cases(GetParam(), {
      {8, 2, 128, 16, 100, {{1, 1000}, {4, 600}, {1, 50}, {1, 100}, {1, 101}}},
      {16, 4, 64, 8, 64, {{1, 3000}, {8, 70}, {2, 65}}},
      {8, 8, 128, 16, 1, {{1, 500}, {3, 10}}},  // window 1: each token sees itself
  });
}

TEST_P(DecodeAttention, LongContextAndSplits) {
  run_cases(GetParam(), {
      {8, 2, 128, 16, 0, {{1, 32768}, {1, 20000}, {1, 7}}},
      {8, 1, 64, 16, 0, {{1, 32000}}},
      {32, 8, 128, 16, 0, {{1, 300}, {1, 2}, {1, 17}}, true, 32768},  // context bound >> lengths
      {16, 4, 128, 16, 0, {{2, 9000}}, false},                         // no hints: bound from tables
  });
}

TEST_P(DecodeAttention, ManySequences) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> len(1, 700);
  AttentionCase c{32, 8, 128, 16, 0, {}};
  for (int s = 0; s < 80; ++s) c.seqs.push_back({1, len(rng)});
  AttentionCase spec{16, 4, 64, 16, 0, {}};
  for (int s = 0; s < 40; ++s) spec.seqs.push_back({1 + s % 4, 4 + len(rng)});
  run_cases(GetParam(), {c, spec});
}

INSTANTIATE_TEST_SUITE_P(DTypes, DecodeAttention, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

// One benchmark shape: num_seqs x context_len, query length 1, bf16, head_dim 128, block size 16,
// blocks of each sequence in a random order. Bandwidth counts the K and V bytes read once.
void decode_attention_perf(int num_seqs, int context_len, int num_heads, int num_kv_heads) {
  constexpr int kHeadDim = 128;
  constexpr int kBlockSize = 16;
  Allocator& alloc = cuda_backend().allocator();
  const int blocks_per_seq = (context_len + kBlockSize - 1) / kBlockSize;
  const int64_t num_blocks = int64_t{num_seqs} * blocks_per_seq;
  std::vector<int32_t> tables(num_blocks), starts{0}, lens;
  for (int64_t i = 0; i < num_blocks; ++i) tables[i] = static_cast<int32_t>(i);
  std::shuffle(tables.begin(), tables.end(), std::mt19937(3));
  for (int s = 0; s < num_seqs; ++s) {
    starts.push_back(s + 1);
    lens.push_back(context_len);
  }
  Tensor tables_d = to_device(TensorView(tables.data(), DType::kI32, {num_seqs, blocks_per_seq}));
  Tensor starts_d = to_device(TensorView(starts.data(), DType::kI32, {num_seqs + 1}));
  Tensor lens_d = to_device(TensorView(lens.data(), DType::kI32, {num_seqs}));
  const Shape cache_shape{num_blocks, num_kv_heads, kBlockSize, kHeadDim};
  Tensor k(alloc, DType::kBF16, cache_shape), v(alloc, DType::kBF16, cache_shape);
  const int64_t width = int64_t{num_heads + 2 * num_kv_heads} * kHeadDim;
  Tensor qkv(alloc, DType::kBF16, {num_seqs, width});
  Tensor out(alloc, DType::kBF16, {num_seqs, int64_t{num_heads} * kHeadDim});
  fill_random(k, 1);
  fill_random(v, 2);
  fill_random(qkv, 3);
  AttentionParams p;
  p.q = qkv.view().slice(1, 0, int64_t{num_heads} * kHeadDim);
  p.k_cache = k;
  p.v_cache = v;
  p.block_tables = tables_d;
  p.query_start = starts_d;
  p.context_lens = lens_d;
  p.out = out;
  p.num_heads = num_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_dim = kHeadDim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  p.max_query_len = 1;
  p.max_context_len = context_len;
  const double kv_bytes = double(num_seqs) * context_len * num_kv_heads * kHeadDim * 2 * 2;
  const double flops = 4.0 * num_seqs * num_heads * kHeadDim * context_len;
  report_perf("decode_attention",
              "bf16 B " + std::to_string(num_seqs) + " ctx " + std::to_string(context_len) + " " +
                  std::to_string(num_heads) + "/" + std::to_string(num_kv_heads) + " hd 128",
              kv_bytes, flops, [&] { cuda_backend().attention(p); }, 50);
}

// The five shapes of issue #7; bench/attention_peers.py times cuDNN and FlashAttention-2 on the
// same shapes (dense KV) in the same gpu-check run.
TEST(DecodeAttentionPerf, IssueShapes) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  decode_attention_perf(64, 4096, 32, 8);
  decode_attention_perf(1, 32768, 32, 8);
  decode_attention_perf(256, 512, 32, 8);
  decode_attention_perf(8, 4096, 32, 8);
  decode_attention_perf(8, 4096, 32, 32);
}

}  // namespace
}  // namespace brisk::testing
