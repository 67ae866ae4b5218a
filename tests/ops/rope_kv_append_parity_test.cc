// rope_kv_append: CUDA against the CPU reference, both on bf16 / f16 qkv and caches. Both round
// the same fp32 results (up to fp32 summation order in the q/k norm), so qkv and the caches must
// agree to one rounding of the dtype: |cuda - cpu| <= 1e-5 + rtol * |cpu|, rtol bf16 1/128,
// f16 1/1024. Unwritten cache slots must stay untouched (zero).
#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct RopeCase {
  int num_heads, num_kv_heads, head_dim, block_size;
  int64_t num_tokens;
  bool qk_norm;
};

void check_rope(DType dtype, const RopeCase& c) {
  std::mt19937 rng(11 + c.head_dim + c.num_kv_heads);
  const int64_t width = int64_t{c.num_heads + 2 * c.num_kv_heads} * c.head_dim;
  const int64_t num_blocks = (c.num_tokens + c.block_size - 1) / c.block_size + 2;
  Tensor qkv = random_tensor(dtype, {c.num_tokens, width}, rng, -2, 2);
  Tensor cos_sin = make_cos_sin(300, c.head_dim);
  std::vector<int32_t> positions(c.num_tokens), slots(c.num_tokens);
  std::uniform_int_distribution<int32_t> position(0, 299);
  for (int64_t t = 0; t < c.num_tokens; ++t) {
    positions[t] = position(rng);
    // Token t goes to slot t shifted by one block, every fifth is skipped (< 0).
    slots[t] = t % 5 == 4 ? -1 : static_cast<int32_t>(t + c.block_size);
  }
  Tensor positions_t = make_i32({c.num_tokens}, positions), slots_t = make_i32({c.num_tokens}, slots);
  Tensor q_norm = random_tensor(dtype, {c.head_dim}, rng, 0.5, 1.5);
  Tensor k_norm = random_tensor(dtype, {c.head_dim}, rng, 0.5, 1.5);
  const Shape cache_shape{num_blocks, c.num_kv_heads, c.block_size, c.head_dim};

  auto params = [&](TensorView qkv_v, TensorView pos, TensorView cs, TensorView qn, TensorView kn,
                    TensorView sl, TensorView kc, TensorView vc) {
    RopeKvAppendParams p;
    p.qkv = qkv_v;
    p.positions = pos;
    p.cos_sin = cs;
    if (c.qk_norm) {
      p.q_norm = qn;
      p.k_norm = kn;
    }
    p.norm_eps = 1e-6f;
    p.num_heads = c.num_heads;
    p.num_kv_heads = c.num_kv_heads;
    p.head_dim = c.head_dim;
    p.slot_mapping = sl;
    p.k_cache = kc;
    p.v_cache = vc;
    return p;
  };
  Tensor qkv_cpu = clone(qkv);
  Tensor k_cpu = zeros(dtype, cache_shape), v_cpu = zeros(dtype, cache_shape);
  cpu_backend().rope_kv_append(params(qkv_cpu, positions_t, cos_sin, q_norm, k_norm, slots_t, k_cpu, v_cpu));

  Tensor qkv_d = to_device(qkv), pos_d = to_device(positions_t), cs_d = to_device(cos_sin);
  Tensor qn_d = to_device(q_norm), kn_d = to_device(k_norm), sl_d = to_device(slots_t);
  Tensor k_d = to_device(zeros(dtype, cache_shape)), v_d = to_device(zeros(dtype, cache_shape));
  cuda_backend().rope_kv_append(params(qkv_d, pos_d, cs_d, qn_d, kn_d, sl_d, k_d, v_d));

  const std::string what = "rope_kv_append " + dtype_str(dtype) + " heads " +
                           std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads) +
                           " hd " + std::to_string(c.head_dim) + (c.qk_norm ? " qk_norm" : "");
  const double rtol = output_rtol(dtype);
  expect_close(host_doubles(qkv_d), to_doubles(qkv_cpu), 1e-5, rtol, what + " qkv");
  expect_close(host_doubles(k_d), to_doubles(k_cpu), 1e-5, rtol, what + " k_cache");
  expect_close(host_doubles(v_d), to_doubles(v_cpu), 0, 0, what + " v_cache");
}

class RopeKvAppend : public ::testing::TestWithParam<DType> {};

TEST_P(RopeKvAppend, MatchesCpu) {
  const RopeCase cases[] = {
      {4, 4, 64, 16, 9, false},   {8, 2, 128, 16, 33, false}, {8, 2, 128, 4, 17, true},
      {16, 2, 64, 16, 5, true},   {4, 1, 32, 8, 12, false},   {8, 1, 256, 16, 3, true},
      {32, 8, 128, 16, 1, false},
  };
  for (const RopeCase& c : cases) check_rope(GetParam(), c);
}

INSTANTIATE_TEST_SUITE_P(DTypes, RopeKvAppend, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

TEST(RopeKvAppendPerf, Llama8B) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  for (int64_t tokens : {int64_t{1}, int64_t{64}, int64_t{4096}}) {
    const int64_t width = (32 + 16) * 128;
    Tensor qkv(alloc, DType::kBF16, {tokens, width});
    std::vector<int32_t> positions(tokens), slots(tokens);
    for (int64_t t = 0; t < tokens; ++t) {
      positions[t] = static_cast<int32_t>(t);
      slots[t] = static_cast<int32_t>(t);
    }
    Tensor pos_d = to_device(TensorView(positions.data(), DType::kI32, {tokens}));
    Tensor slots_d = to_device(TensorView(slots.data(), DType::kI32, {tokens}));
    Tensor cos_sin = to_device(make_cos_sin(4096, 128));
    Tensor k(alloc, DType::kBF16, {4096 / 16, 8, 16, 128}), v(alloc, DType::kBF16, {4096 / 16, 8, 16, 128});
    RopeKvAppendParams p;
    p.qkv = qkv;
    p.positions = pos_d;
    p.cos_sin = cos_sin;
    p.num_heads = 32;
    p.num_kv_heads = 8;
    p.head_dim = 128;
    p.slot_mapping = slots_d;
    p.k_cache = k;
    p.v_cache = v;
    const double bytes = tokens * (width * 2.0 * 2 - 8 * 128 * 2 + 2 * 8 * 128 * 2 + 128 * 4);
    report_perf("rope_kv_append", "bf16 32/8 heads hd 128, tokens " + std::to_string(tokens), bytes, 0,
                [&] { cuda_backend().rope_kv_append(p); });
  }
}

}  // namespace
}  // namespace brisk::testing
