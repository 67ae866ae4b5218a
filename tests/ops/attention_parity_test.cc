// attention: CUDA against the CPU reference on the same bf16 / f16 q and paged caches, the CPU
// writing f32. Outputs are convex combinations of v rows in [-1, 1]; the CUDA op differs by fp32
// summation order, expf and one rounding of its output: |cuda - cpu| <= 1e-4 + rtol * |cpu|
// with rtol bf16 1/128, f16 1/1024. Cases cover decode and prefill, ragged batches, chunks
// continuing earlier context, partial last blocks, block sizes 4/16, group sizes 1/2/4/8 (and
// chunks of heads beyond a block's rows), head_dim 32/64/128/256, sliding windows and split-KV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct Seq {
  int q_len, context_len;
};

struct AttentionCase {
  int num_heads, num_kv_heads, head_dim, block_size, sliding_window;
  std::vector<Seq> seqs;
  bool hints = true;  // pass max_query_len / max_context_len
};

// Host inputs of one case: q is a strided slice of a wider qkv-like tensor, blocks are shuffled.
struct AttentionInputs {
  Tensor qkv, k_cache, v_cache, block_tables, query_start, context_lens;
  int64_t num_tokens = 0;
  int max_query = 0, max_context = 0;
};

AttentionInputs make_inputs(DType dtype, const AttentionCase& c, std::mt19937& rng) {
  AttentionInputs in;
  int max_blocks = 0, total_blocks = 0;
  std::vector<int32_t> starts{0}, lens;
  for (const Seq& s : c.seqs) {
    in.num_tokens += s.q_len;
    starts.push_back(static_cast<int32_t>(in.num_tokens));
    lens.push_back(s.context_len);
    const int blocks = (s.context_len + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, blocks + 1);  // one spare column: tables may be wider
    total_blocks += blocks;
    in.max_query = std::max(in.max_query, s.q_len);
    in.max_context = std::max(in.max_context, s.context_len);
  }
  const int num_cache_blocks = total_blocks + 3;
  std::vector<int32_t> ids(num_cache_blocks);
  for (int i = 0; i < num_cache_blocks; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> tables(c.seqs.size() * max_blocks, 0);
  int next = 0;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const int blocks = (c.seqs[s].context_len + c.block_size - 1) / c.block_size;
    for (int b = 0; b < blocks; ++b) tables[s * max_blocks + b] = ids[next++];
  }
  const int64_t width = int64_t{c.num_heads + 2 * c.num_kv_heads} * c.head_dim;
  in.qkv = random_tensor(dtype, {in.num_tokens, width}, rng);
  const Shape cache_shape{num_cache_blocks, c.num_kv_heads, c.block_size, c.head_dim};
  in.k_cache = random_tensor(dtype, cache_shape, rng);
  in.v_cache = random_tensor(dtype, cache_shape, rng);
  in.block_tables = make_i32({static_cast<int64_t>(c.seqs.size()), max_blocks}, tables);
  in.query_start = make_i32({static_cast<int64_t>(starts.size())}, starts);
  in.context_lens = make_i32({static_cast<int64_t>(lens.size())}, lens);
  return in;
}

AttentionParams make_params(const AttentionCase& c, const AttentionInputs& in, TensorView qkv,
                            TensorView k, TensorView v, TensorView tables, TensorView starts,
                            TensorView lens, TensorView out) {
  AttentionParams p;
  p.q = qkv.slice(1, 0, int64_t{c.num_heads} * c.head_dim);
  p.k_cache = k;
  p.v_cache = v;
  p.block_tables = tables;
  p.query_start = starts;
  p.context_lens = lens;
  p.out = out;
  p.num_heads = c.num_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.sliding_window = c.sliding_window;
  p.max_query_len = c.hints ? in.max_query : 0;
  p.max_context_len = c.hints ? in.max_context : 0;
  return p;
}

void check_attention(DType dtype, const AttentionCase& c) {
  std::mt19937 rng(static_cast<unsigned>(c.head_dim * 131 + c.num_heads * 7 + c.seqs.size()));
  AttentionInputs in = make_inputs(dtype, c, rng);
  const Shape out_shape{in.num_tokens, int64_t{c.num_heads} * c.head_dim};
  Tensor expected = zeros(DType::kF32, out_shape);
  cpu_backend().attention(make_params(c, in, in.qkv, in.k_cache, in.v_cache, in.block_tables,
                                      in.query_start, in.context_lens, expected));
  Tensor qkv_d = to_device(in.qkv), k_d = to_device(in.k_cache), v_d = to_device(in.v_cache);
  Tensor tables_d = to_device(in.block_tables), starts_d = to_device(in.query_start);
  Tensor lens_d = to_device(in.context_lens);
  Tensor out_d(cuda_backend().allocator(), dtype, out_shape);
  cuda_backend().attention(make_params(c, in, qkv_d, k_d, v_d, tables_d, starts_d, lens_d, out_d));
  std::string what = "attention " + dtype_str(dtype) + " heads " + std::to_string(c.num_heads) + "/" +
                     std::to_string(c.num_kv_heads) + " hd " + std::to_string(c.head_dim) + " bs " +
                     std::to_string(c.block_size) + " window " + std::to_string(c.sliding_window) +
                     " seqs";
  for (const Seq& s : c.seqs) what += " (" + std::to_string(s.q_len) + "/" + std::to_string(s.context_len) + ")";
  expect_close(host_doubles(out_d), to_doubles(expected), 1e-4, output_rtol(dtype), what);
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
