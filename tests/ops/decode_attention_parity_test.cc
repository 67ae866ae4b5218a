// The decode attention kernel (kernels/decode_attention/) against the CPU reference, through the
// attention op, with the decode tolerances of attention_test_util.h: bf16 and f16 KV, head_dim
// 64 / 128 / 256, groups 1 (MHA), 2, 4, 8 (and MQA), 1 to 8 query tokens per sequence (causal
// among them), ragged context lengths from 1 to 32k with partial last blocks, block sizes 4 to
// 32 over shuffled block tables, sliding windows, a context bound far above the actual lengths
// (as under CUDA-graph capture) and the split-KV paths, whose in-kernel merge must repeat exactly
// (eager and from a CUDA graph). The *Perf* cases time the benchmark shapes of issue #7 (H200:
// 32 / 8 heads, head_dim 128) on random data.
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

// Split-KV partials are merged inside the kernel by the last split block of each (sequence, kv
// head, row chunk), in split order, which then resets its counter: repeated launches on the
// stream, eager and replayed from a CUDA graph, must each write the whole output (poisoned before
// each) with the same bits, and the first must match the CPU reference.
TEST_P(DecodeAttention, SplitMergeRepeats) {
  const DType dtype = GetParam();
  const AttentionCase c{32, 8, 128, 16, 0, {{1, 9000}, {2, 3000}, {1, 1}, {1, 700}}};
  check_attention(dtype, c, 21);
  std::mt19937 rng(21);
  AttentionInputs in = make_attention_inputs(dtype, c, rng);
  Tensor qkv = to_device(in.qkv), k = to_device(in.k_cache), v = to_device(in.v_cache);
  Tensor tables = to_device(in.block_tables), starts = to_device(in.query_start);
  Tensor lens = to_device(in.context_lens);
  const Shape out_shape{in.num_tokens, int64_t{c.num_heads} * c.head_dim};
  const Tensor nans = make_tensor(dtype, out_shape, std::vector<double>(out_shape.num_elements(), NAN));
  Tensor poison = to_device(nans), out = to_device(nans);
  const AttentionParams params = make_attention_params(c, in, qkv, k, v, tables, starts, lens, out);
  Backend& gpu = cuda_backend();
  gpu.attention(params);
  const std::vector<double> first = host_doubles(out);
  for (double x : first) ASSERT_FALSE(std::isnan(x)) << "an output element was not written";
  for (int i = 0; i < 3; ++i) {
    gpu.copy(out, poison);
    gpu.attention(params);
    gpu.attention(params);  // back to back: the second waits on the first through PDL
    EXPECT_EQ(host_doubles(out), first) << "eager launch " << i;
  }
  std::unique_ptr<RecordedGraph> graph = gpu.record_graph([&] { gpu.attention(params); });
  if (graph == nullptr) return;  // a backend without graphs
  for (int i = 0; i < 3; ++i) {
    gpu.copy(out, poison);
    graph->replay();
    EXPECT_EQ(host_doubles(out), first) << "graph replay " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, DecodeAttention, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

// One benchmark shape: num_seqs x context_len, query length 1, bf16, head_dim 128, block size
// perf_block_size(), blocks of each sequence in a random order. Bandwidth counts the K and V bytes
// read once. Timed as the attention op alone over a cache already written ("decode_attention",
// what the peers do), and as the engine's decode layers run it, with RoPE and the new token's KV
// append (rope_append_attention, fused where that pays; "decode_attention_fused"). The calls
// take four copies of the batch in turn, so that none finds K / V in L2 from the call before, as
// in the engine (the other layers run in between): the kernel's evict-first copies leave the
// lines it prefetched for its first tiles in L2, and with one cache for every call those served
// the next call (docs/perf/decode_attention.md).
void decode_attention_perf(int num_seqs, int context_len, int num_heads, int num_kv_heads) {
  constexpr int kHeadDim = 128;
  constexpr int kCopies = 4;
  const int block_size = perf_block_size();
  std::vector<DeviceAttentionBatch> batches;
  for (int c = 0; c < kCopies; ++c) {
    batches.push_back(make_device_attention_batch(std::vector<Seq>(num_seqs, {1, context_len}), num_heads,
                                                  num_kv_heads, kHeadDim, block_size));
  }
  // Every copy has the same block tables (make_device_attention_batch shuffles with a fixed seed).
  const Tensor tables = to_host(batches[0].block_tables);
  const int64_t max_blocks = tables.shape()[1];
  std::vector<int32_t> positions(num_seqs, context_len - 1), slots(num_seqs);
  for (int s = 0; s < num_seqs; ++s) {
    const int32_t last = context_len - 1;
    slots[s] = tables.data_as<const int32_t>()[s * max_blocks + last / block_size] * block_size + last % block_size;
  }
  const Tensor positions_d = to_device(TensorView(positions.data(), DType::kI32, {num_seqs}));
  const Tensor slots_d = to_device(TensorView(slots.data(), DType::kI32, {num_seqs}));
  const Tensor cos_sin_d = to_device(make_cos_sin(context_len, kHeadDim, 500000.0));
  RopeKvAppendParams rope;
  rope.positions = positions_d;
  rope.cos_sin = cos_sin_d;
  rope.num_heads = num_heads;
  rope.num_kv_heads = num_kv_heads;
  rope.head_dim = kHeadDim;
  rope.slot_mapping = slots_d;
  std::vector<RopeKvAppendParams> ropes(kCopies, rope);
  for (int c = 0; c < kCopies; ++c) {
    ropes[c].qkv = batches[c].qkv;
    ropes[c].k_cache = batches[c].k_cache;
    ropes[c].v_cache = batches[c].v_cache;
  }
  const double kv_bytes = double(num_seqs) * context_len * num_kv_heads * kHeadDim * 2 * 2;
  const double flops = 4.0 * num_seqs * num_heads * kHeadDim * context_len;
  const std::string shape = "bf16 B " + std::to_string(num_seqs) + " ctx " + std::to_string(context_len) + " " +
                            std::to_string(num_heads) + "/" + std::to_string(num_kv_heads) + " hd 128";
  int call = 0;
  report_perf("decode_attention", shape, kv_bytes, flops,
              [&] { cuda_backend().attention(batches[call++ % kCopies].params); }, 48);
  report_perf("decode_attention_fused", shape, kv_bytes, flops, [&] {
    const int c = call++ % kCopies;
    cuda_backend().rope_append_attention(ropes[c], batches[c].params);
  }, 48);
}

// A decode step of serving traffic (issue #31: ShareGPT, ~140 running sequences of a few hundred
// keys each): contexts spread over 16 .. 1100, the attention op alone over four caches as above,
// with the context bound the engine's decode graphs pass (the bucket over 1100: 4096) and with the
// batch's true maximum (eager steps).
void decode_attention_serving_perf(int num_seqs) {
  constexpr int kHeadDim = 128, kHeads = 32, kKvHeads = 8, kCopies = 4;
  std::vector<Seq> seqs;
  double keys = 0;
  for (int i = 0; i < num_seqs; ++i) {
    const int len = 16 + (i * 7919 + 104729) % 1085;  // a fixed spread over [16, 1100]
    seqs.push_back({1, len});
    keys += len;
  }
  std::vector<DeviceAttentionBatch> batches;
  for (int c = 0; c < kCopies; ++c)
    batches.push_back(make_device_attention_batch(seqs, kHeads, kKvHeads, kHeadDim, perf_block_size()));
  const double kv_bytes = keys * kKvHeads * kHeadDim * 2 * 2;
  const double flops = 4.0 * kHeads * kHeadDim * keys;
  for (const int bound : {0, 4096}) {
    std::vector<AttentionParams> params;
    for (DeviceAttentionBatch& b : batches) {
      params.push_back(b.params);
      if (bound > 0) params.back().max_context_len = bound;
    }
    const std::string shape = "bf16 B " + std::to_string(num_seqs) + " ctx 16-1100 " +
                              (bound > 0 ? "bound " + std::to_string(bound) : std::string("true max")) + " 32/8";
    int call = 0;
    report_perf("decode_attention", shape, kv_bytes, flops,
                [&] { cuda_backend().attention(params[call++ % kCopies]); }, 48);
  }
}

TEST(DecodeAttentionPerf, ServingShapes) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  // 24, 40 and 168: batches whose last wave of blocks is short at the graphs' bound (split plan).
  for (const int num_seqs : {24, 40, 64, 160, 168, 320}) decode_attention_serving_perf(num_seqs);
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
