// rope_append_attention: rope_kv_append then attention, which the CUDA backend fuses into the
// decode kernel (DecodeRopeAppend) for decode batches without q / k norms. Each case runs three
// ways: the CPU reference (the two ops), CUDA fused, and CUDA's two separate ops. Fused and
// separate must agree bit for bit (the same roundings of the same fp32 values: out, K and V
// caches); fused must leave qkv unrotated (proof that it fused; the CUDA backend fuses where that
// pays, always for contexts over 1024 keys), separate rotates it; against the
// CPU, out takes the decode tolerances of attention_test_util.h and the caches one rounding.
// Cases: groups 1 / 4 / 8, 1 to 8 new tokens (several row chunks), head_dim 64 / 128 / 256, block
// sizes 8 / 16, sliding windows, split-KV contexts up to 32k (new tokens across a tile and split
// boundary), and skipped slots (< 0: no cache write on either path).
#include <gtest/gtest.h>

#include <cmath>

#include "attention_test_util.h"

namespace brisk::testing {
namespace {

// Bit-for-bit equality, reporting the first difference (the vectors are large).
void expect_same(const std::vector<double>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] != expected[i] && !(std::isnan(actual[i]) && std::isnan(expected[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
      return;
    }
  }
}

struct Run {
  Tensor qkv, k_cache, v_cache, out;
};

void check_case(DType dtype, const AttentionCase& c, bool qk_norm, unsigned seed) {
  std::mt19937 rng(seed);
  AttentionInputs in = make_attention_inputs(dtype, c, rng);
  // The new tokens of each sequence are its last q_len positions; their slots follow the block
  // table, every seventh token's skipped.
  NewTokenSlots appends =
      new_token_slots(c.seqs, in.block_tables.data_as<const int32_t>(), in.block_tables.shape()[1], c.block_size);
  for (size_t t = 6; t < appends.slots.size(); t += 7) appends.slots[t] = -1;
  const Tensor positions_h = make_i32({in.num_tokens}, appends.positions);
  const Tensor slots_h = make_i32({in.num_tokens}, appends.slots);
  const Tensor cos_sin_h = make_cos_sin(in.max_context, c.head_dim);
  const Tensor q_norm_h = random_tensor(dtype, {c.head_dim}, rng, 0.5, 1.5);
  const Tensor k_norm_h = random_tensor(dtype, {c.head_dim}, rng, 0.5, 1.5);
  const Shape out_shape{in.num_tokens, int64_t{c.num_heads} * c.head_dim};

  // One run on `backend` over copies of the inputs; fused: through rope_append_attention.
  auto run = [&](Backend& backend, bool fused) {
    const bool cpu = &backend == &cpu_backend();
    auto place = [&](const Tensor& host) { return cpu ? clone(host) : to_device(host); };
    Run r{place(in.qkv), place(in.k_cache), place(in.v_cache),
          place(make_tensor(dtype, out_shape, std::vector<double>(out_shape.num_elements(), NAN)))};
    const Tensor tables_b = place(in.block_tables), starts_b = place(in.query_start), lens_b = place(in.context_lens);
    const Tensor positions_b = place(positions_h), slots_b = place(slots_h), cos_sin_b = place(cos_sin_h);
    const Tensor q_norm_b = place(q_norm_h), k_norm_b = place(k_norm_h);
    RopeKvAppendParams rope;
    rope.qkv = r.qkv;
    rope.positions = positions_b;
    rope.cos_sin = cos_sin_b;
    if (qk_norm) {
      rope.q_norm = q_norm_b;
      rope.k_norm = k_norm_b;
    }
    rope.num_heads = c.num_heads;
    rope.num_kv_heads = c.num_kv_heads;
    rope.head_dim = c.head_dim;
    rope.slot_mapping = slots_b;
    rope.k_cache = r.k_cache;
    rope.v_cache = r.v_cache;
    const AttentionParams attn =
        make_attention_params(c, in, r.qkv, r.k_cache, r.v_cache, tables_b, starts_b, lens_b, r.out);
    if (fused) {
      backend.rope_append_attention(rope, attn);
    } else {
      backend.rope_kv_append(rope);
      backend.attention(attn);
    }
    backend.synchronize();
    return r;
  };
  const Run cpu = run(cpu_backend(), true);
  const Run fused = run(cuda_backend(), true);
  const Run separate = run(cuda_backend(), false);

  const std::string what = describe(dtype, c) + (qk_norm ? " qk_norm" : "");
  expect_same(host_doubles(fused.out), host_doubles(separate.out), what + ": out, fused vs separate");
  expect_same(host_doubles(fused.k_cache), host_doubles(separate.k_cache), what + ": k_cache, fused vs separate");
  expect_same(host_doubles(fused.v_cache), host_doubles(separate.v_cache), what + ": v_cache, fused vs separate");
  const double rtol = output_rtol(dtype);
  const std::vector<double> rotated = to_doubles(cpu.qkv);
  // Fused (qkv untouched) for decode batches with contexts over 1024 keys; never with q / k norms
  // or off the decode kernel; otherwise as the split count decides (decode_attention_fuses_append).
  const bool decode = !qk_norm && uses_decode_kernel(c, in.num_tokens, in.max_query);
  const std::vector<double> after = host_doubles(fused.qkv), original = to_doubles(in.qkv);
  if (decode && in.max_context > 1024) {
    expect_same(after, original, what + ": qkv after the fused op (untouched)");
  } else if (!decode || after != original) {
    expect_close(after, rotated, 1e-5, rtol, what + ": qkv after the unfused op");
  }
  expect_close(host_doubles(separate.qkv), rotated, 1e-5, rtol, what + ": qkv after rope_kv_append");
  expect_close(host_doubles(fused.k_cache), to_doubles(cpu.k_cache), 1e-5, rtol, what + " k_cache");
  expect_close(host_doubles(fused.v_cache), to_doubles(cpu.v_cache), 0, 0, what + " v_cache");
  const double u = dtype == DType::kBF16 ? 1.0 / 512 : 1.0 / 4096;
  expect_close(host_doubles(fused.out), to_doubles(cpu.out), 2 * u, rtol, what + " out");
}

class RopeAppendAttention : public ::testing::TestWithParam<DType> {};

TEST_P(RopeAppendAttention, MatchesSeparateOpsAndCpu) {
  const AttentionCase cases[] = {
      // heads, kv heads, head_dim, block size, window, {new tokens, context} per sequence
      {32, 8, 128, 16, 0, {{1, 1}, {1, 17}, {1, 1000}, {1, 4097}}},  // G 4, one token
      {16, 2, 64, 16, 0, {{8, 100}, {7, 2000}, {1, 1}}},             // G 8 x 8 tokens: 4 row chunks
      {8, 8, 128, 8, 0, {{4, 40}, {2, 3000}}},                       // MHA, block size 8
      {8, 1, 256, 16, 0, {{2, 70}, {1, 5}}},                         // MQA, hd 256
      {8, 2, 128, 16, 64, {{4, 600}, {1, 30}}},                      // sliding window
      {8, 2, 128, 16, 0, {{1, 32768}, {3, 20000}, {8, 8964}}},       // splits; 8964: a tile boundary
  };
  unsigned seed = 5;
  for (const AttentionCase& c : cases) check_case(GetParam(), c, false, seed++);
}

// q / k norms (Qwen3): not fused, the separate ops run.
TEST_P(RopeAppendAttention, QkNormRunsSeparately) {
  check_case(GetParam(), {16, 4, 128, 16, 0, {{1, 300}, {2, 50}}}, true, 3);
}

INSTANTIATE_TEST_SUITE_P(DTypes, RopeAppendAttention, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

}  // namespace
}  // namespace brisk::testing
