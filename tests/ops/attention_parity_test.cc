// attention: CUDA against the CPU reference on the same bf16 / f16 q and paged caches, the CPU
// writing f32, with the tolerances of attention_test_util.h (decode batches run on the decode
// kernel, the rest on the generic one). Cases cover decode and prefill, ragged batches, chunks
// continuing earlier context, partial last blocks, block sizes 4/16, group sizes 1/2/4/8 (and
// chunks of heads beyond a block's rows), head_dim 32/64/128/256, sliding windows and split-KV.
// decode_attention_parity_test.cc covers the decode kernel in depth.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "attention_test_util.h"

namespace brisk::testing {
namespace {

void check_attention(DType dtype, const AttentionCase& c) {
  check_attention(dtype, c, static_cast<unsigned>(c.head_dim * 131 + c.num_heads * 7 + c.seqs.size()));
}

class Attention : public ::testing::TestWithParam<DType> {};

TEST_P(Attention, MatchesCpu) {
  const std::vector<AttentionCase> cases = {
      {16, 4, 128, 16, 0, {{1, 1}, {1, 17}, {1, 64}, {1, 100}}},           // decode batch
      {8, 4, 64, 16, 0, {{5, 5}, {16, 16}, {13, 40}}},                     // prefill + chunk
      {32, 4, 128, 4, 0, {{7, 30}, {1, 9}, {20, 55}}},                     // G 8, block 4
      {4, 4, 64, 16, 0, {{33, 33}}},                                        // MHA
      {8, 4, 64, 16, 8, {{20, 20}, {1, 30}, {6, 26}}},                     // sliding window
      {8, 2, 128, 16, 0, {{1, 2000}}},                                      // split-KV decode
      {8, 2, 128, 16, 256, {{1, 1500}, {1, 700}}, false},                  // split + window, no hints
      {4, 2, 32, 8, 0, {{9, 20}, {3, 3}}},                                  // hd 32
      {8, 1, 256, 16, 0, {{9, 20}, {1, 50}}},                               // hd 256, G 8
      {48, 1, 256, 16, 0, {{3, 10}}},                                       // G 48: partial head chunk
      {16, 8, 64, 16, 0, {{70, 70}, {2, 200}}},                             // G 2, several q tiles
  };
  for (const AttentionCase& c : cases) check_attention(GetParam(), c);
}

INSTANTIATE_TEST_SUITE_P(DTypes, Attention, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

// Llama-3-8B attention: 32 / 8 heads, head_dim 128, block size 16.
void attention_perf(int num_seqs, int q_len, int context_len) {
  Allocator& alloc = cuda_backend().allocator();
  const int block_size = 16;
  const int blocks_per_seq = (context_len + block_size - 1) / block_size;
  std::vector<int32_t> tables(int64_t{num_seqs} * blocks_per_seq), starts{0}, lens;
  for (int64_t i = 0; i < static_cast<int64_t>(tables.size()); ++i) tables[i] = static_cast<int32_t>(i);
  for (int s = 0; s < num_seqs; ++s) {
    starts.push_back((s + 1) * q_len);
    lens.push_back(context_len);
  }
  const int64_t num_tokens = int64_t{num_seqs} * q_len;
  Tensor tables_d = to_device(TensorView(tables.data(), DType::kI32, {num_seqs, blocks_per_seq}));
  Tensor starts_d = to_device(TensorView(starts.data(), DType::kI32, {num_seqs + 1}));
  Tensor lens_d = to_device(TensorView(lens.data(), DType::kI32, {num_seqs}));
  const Shape cache_shape{int64_t{num_seqs} * blocks_per_seq, 8, block_size, 128};
  Tensor k(alloc, DType::kBF16, cache_shape), v(alloc, DType::kBF16, cache_shape);
  Tensor q(alloc, DType::kBF16, {num_tokens, 48 * 128}), out(alloc, DType::kBF16, {num_tokens, 32 * 128});
  // Zero the cache and q: uninitialised bf16 may hold NaNs, which would only slow nothing but
  // keep the numbers honest.
  cuda_backend().copy(k, zeros(DType::kBF16, cache_shape));
  cuda_backend().copy(v, k);
  cuda_backend().copy(q, zeros(DType::kBF16, {num_tokens, 48 * 128}));
  AttentionParams p;
  p.q = q.view().slice(1, 0, 32 * 128);
  p.k_cache = k;
  p.v_cache = v;
  p.block_tables = tables_d;
  p.query_start = starts_d;
  p.context_lens = lens_d;
  p.out = out;
  p.num_heads = 32;
  p.num_kv_heads = 8;
  p.head_dim = 128;
  p.scale = 1.0f / std::sqrt(128.0f);
  p.max_query_len = q_len;
  p.max_context_len = context_len;
  const double kv_bytes = double(num_seqs) * context_len * 8 * 128 * 2 * 2;
  // Causal: query i sees context_len - q_len + i + 1 keys; 4 FLOPs per (query head, key, dim).
  double pairs = 0;
  for (int i = 0; i < q_len; ++i) pairs += context_len - q_len + i + 1;
  const double flops = 4.0 * num_seqs * 32 * 128 * pairs;
  report_perf("attention", "bf16 B " + std::to_string(num_seqs) + " q " + std::to_string(q_len) +
                               " ctx " + std::to_string(context_len) + " 32/8 hd 128",
              kv_bytes, flops, [&] { cuda_backend().attention(p); }, 10);
}

TEST(AttentionPerf, Llama8B) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  attention_perf(1, 1, 4096);
  attention_perf(64, 1, 4096);
  attention_perf(1, 4096, 4096);
}

}  // namespace
}  // namespace brisk::testing
