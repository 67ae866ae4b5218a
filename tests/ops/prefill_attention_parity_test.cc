// The prefill attention kernels (kernels/prefill_attention/: the Hopper wgmma + TMA one where it
// applies, else the mma.sync one) against the CPU reference, through the attention op, with the
// tensor-core tolerances of attention_test_util.h: bf16 and f16 KV, head_dim 64 / 128 / 256,
// groups 1 (MHA), 4, 8 (and others), ragged batches of chunks of 1 to 700 new tokens continuing
// 0 to 3000 cached ones, partial last blocks, block sizes 4 / 8 / 16 / 32 / 256 over shuffled
// block tables, sliding windows, and batches that mix decode-length sequences with long chunks
// (any sequence over 8 new tokens sends the whole batch here). The *Perf* cases time the
// benchmark shapes of issue #10 (H200: 32 / 8 heads, head_dim 128, causal);
// bench/attention_peers.py times cuDNN and FlashAttention-2 on the same shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attention_test_util.h"

namespace brisk::testing {
namespace {

class PrefillAttention : public ::testing::TestWithParam<DType> {};

void run_cases(DType dtype, const std::vector<AttentionCase>& cases) {
  unsigned seed = 101;
  for (const AttentionCase& c : cases) check_attention(dtype, c, seed++);
}

// {q tokens, context (cached + new)} per sequence.
TEST_P(PrefillAttention, FreshPrompts) {
  run_cases(GetParam(), {
      // heads, kv heads, head_dim, block size, window, sequences
      {32, 8, 128, 16, 0, {{9, 9}, {16, 16}, {17, 17}, {100, 100}, {257, 257}}},  // G 4
      {16, 2, 64, 16, 0, {{33, 33}, {300, 300}, {12, 12}}},                        // G 8
      {4, 4, 128, 16, 0, {{129, 129}, {64, 64}, {65, 65}}},                        // MHA
      {8, 1, 64, 16, 0, {{200, 200}, {31, 31}}},                                   // MQA
      {4, 2, 256, 16, 0, {{70, 70}, {10, 10}}},                                    // hd 256
  });
}

TEST_P(PrefillAttention, ChunksContinuingContext) {
  run_cases(GetParam(), {
      {16, 4, 128, 16, 0, {{300, 3000}, {64, 1000}, {513, 530}, {9, 2049}}},  // G 4
      {16, 2, 64, 8, 0, {{128, 1500}, {700, 700}, {45, 46}}},   // bs 8
      {8, 8, 128, 32, 0, {{200, 2100}, {33, 34}, {77, 1000}}},  // MHA, bs 32
      {8, 1, 128, 16, 0, {{150, 2200}, {16, 3016}}},            // G 8
      {8, 2, 256, 16, 0, {{40, 900}, {100, 101}}},              // hd 256
      {12, 4, 64, 16, 0, {{90, 1090}}},                          // G 3: rows straddle tokens
  });
}

TEST_P(PrefillAttention, SlidingWindow) {
  run_cases(GetParam(), {
      {8, 2, 128, 16, 100, {{300, 1300}, {50, 50}, {200, 200}, {9, 500}}},
      {16, 4, 64, 8, 64, {{129, 2000}, {70, 70}}},
      {8, 8, 128, 16, 1, {{40, 100}, {20, 20}}},  // window 1: each token sees itself
      {8, 1, 64, 16, 513, {{600, 3000}}},         // G 8, window past a tile edge
  });
}

// Block sizes at the edges of the Hopper kernel's share (prefill_attention.h): 256 (a TMA box
// covers a tile's 128 keys inside one block) and 4 (below its one-box-per-block minimum of 8: the
// mma.sync kernel runs hd 64 / 128 too).
TEST_P(PrefillAttention, BlockSizeEdges) {
  run_cases(GetParam(), {
      {8, 2, 128, 256, 0, {{300, 700}, {40, 40}, {129, 513}}},
      {8, 1, 64, 256, 100, {{200, 600}}},
      {8, 2, 128, 4, 0, {{70, 300}, {9, 9}}},
      {8, 8, 64, 4, 0, {{33, 100}}},
  });
}

TEST_P(PrefillAttention, MixedDecodeAndChunks) {
  run_cases(GetParam(), {
      {16, 4, 128, 16, 0, {{1, 1}, {1, 700}, {500, 1200}, {1, 33}, {3, 3}, {12, 2000}}},
      {16, 2, 64, 16, 0, {{1, 50}, {9, 9}, {1, 2999}}},
      {8, 2, 128, 16, 0, {{70, 3070}}, false},  // no hints: bounds from the sizes
  });
}

// NaN in the cache past each sequence's context (its last block's free slots, unused blocks):
// tiles that reach past the context must keep it out (its weights are 0, but 0 x NaN is NaN).
TEST_P(PrefillAttention, GarbagePastContext) {
  std::vector<AttentionCase> cases = {
      {32, 8, 128, 64, 0, {{100, 100}, {37, 301}, {200, 999}, {5, 70}}},
      {16, 2, 64, 16, 0, {{33, 45}, {300, 300}, {1, 7}}},
      {8, 8, 128, 256, 0, {{129, 200}, {20, 20}}},
      {16, 4, 128, 64, 100, {{150, 650}}},
  };
  for (AttentionCase& c : cases) c.nan_past_context = true;
  run_cases(GetParam(), cases);
}

TEST_P(PrefillAttention, RaggedBatches) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> q_len(1, 700), cached(0, 3000);
  const int groups[3][2] = {{8, 8}, {16, 4}, {16, 2}};  // groups 1, 4, 8
  const int head_dims[3] = {128, 64, 128};
  const int block_sizes[3] = {16, 32, 16};
  std::vector<AttentionCase> cases;
  for (int i = 0; i < 3; ++i) {
    AttentionCase c{groups[i][0], groups[i][1], head_dims[i], block_sizes[i], 0, {}};
    for (int s = 0; s < 6; ++s) {
      const int q = q_len(rng);
      c.seqs.push_back({q, q + (s % 3 == 0 ? 0 : cached(rng))});
    }
    cases.push_back(c);
  }
  run_cases(GetParam(), cases);
}

INSTANTIATE_TEST_SUITE_P(DTypes, PrefillAttention, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

// One benchmark batch: bf16, 32 / 8 heads, head_dim 128, block size perf_block_size(), blocks in
// a random order, each sequence's new tokens the last q_len of its context (their K / V already
// in the cache).
// FLOPs: useful causal ones, 4 heads d (q_len (context - q_len) + q_len^2 / 2) per sequence.
void prefill_attention_perf(const std::string& name, const std::vector<Seq>& seqs) {
  constexpr int kHeads = 32, kHeadDim = 128;
  double flops = 0;
  for (const Seq& s : seqs)
    flops += 4.0 * kHeads * kHeadDim * (double(s.q_len) * (s.context_len - s.q_len) + 0.5 * double(s.q_len) * s.q_len);
  DeviceAttentionBatch batch = make_device_attention_batch(seqs, kHeads, 8, kHeadDim, perf_block_size());
  report_perf("prefill_attention", name, 0.0, flops, [&] { cuda_backend().attention(batch.params); }, 20);
}

// The four shapes of issue #10 (bench/attention_peers.py names them the same way).
TEST(PrefillAttentionPerf, IssueShapes) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  prefill_attention_perf("bf16 prefill 4x4096 32/8 hd 128", std::vector<Seq>(4, {4096, 4096}));
  prefill_attention_perf("bf16 prefill 1x16384 32/8 hd 128", {{16384, 16384}});
  std::vector<Seq> ragged;  // 64 lengths in [100, 2000], the same formula as the peers script
  for (int i = 0; i < 64; ++i) {
    const int len = 100 + (i * 977 + 331) % 1901;
    ragged.push_back({len, len});
  }
  prefill_attention_perf("bf16 prefill ragged 64x100-2000 32/8 hd 128", ragged);
  prefill_attention_perf("bf16 chunk 2048 after 14336 32/8 hd 128", {{2048, 16384}});
}

}  // namespace
}  // namespace brisk::testing
