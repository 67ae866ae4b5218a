// The quantized KV cache's CPU reference (KvQuant in backend.h): rows round-trip within a
// quantization step (half of one, but the zero point's rounding may clamp the top code; codes
// checked by hand for one row), and attention over a cache written by
// rope_kv_append in each format stays close to attention over the fp32 cache.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kv_quant.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using cpu::KvRow;

struct QuantizedRow {
  std::vector<uint8_t> codes;
  Half scale{};
  uint8_t zero = 0;
  KvRow row() { return {codes.data(), &scale, &zero, 1.0f}; }
};

std::vector<float> round_trip(KvQuant kind, const std::vector<float>& x, QuantizedRow& q, float fp8_scale = 1.0f) {
  q.codes.assign(kind == KvQuant::kInt4 ? x.size() / 2 : x.size(), 0);
  KvRow row = q.row();
  row.fp8_scale = fp8_scale;
  cpu::quantize_kv_row(x.data(), static_cast<int64_t>(x.size()), kind, row);
  std::vector<float> out(x.size());
  cpu::dequantize_kv_row(row, static_cast<int64_t>(x.size()), kind, out.data());
  return out;
}

TEST(KvQuant, Int8CodesOfOneRow) {
  QuantizedRow q;
  const std::vector<float> out = round_trip(KvQuant::kInt8, {-1.0f, 0.0f, 0.5f, 1.0f}, q);
  // scale = 2 / 255 rounded up to f16 = 0.0078506470 (nearest would be 0.0078430176, below it);
  // zero = rint(1 / scale) = rint(127.378) = 127.
  EXPECT_EQ(half_to_float(q.scale), 0.0078506470f);
  EXPECT_EQ(q.zero, 127);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0, 127, 191, 254}));
  EXPECT_FLOAT_EQ(out[2], 64 * 0.0078506470f);
  EXPECT_FLOAT_EQ(out[3], 127 * 0.0078506470f);
}

TEST(KvQuant, RowsRoundTripWithinAStep) {
  std::mt19937 rng(7);
  for (KvQuant kind : {KvQuant::kInt8, KvQuant::kInt4}) {
    for (auto [lo, hi] :
         {std::pair{-1.0, 1.0}, std::pair{0.5, 30.0}, std::pair{-4.0, -0.001}, std::pair{-1e-4, 3e-4}}) {
      std::vector<float> x;
      for (double v : testing::random_values(128, rng, lo, hi)) x.push_back(static_cast<float>(v));
      QuantizedRow q;
      const std::vector<float> out = round_trip(kind, x, q);
      const float step = half_to_float(q.scale);
      for (size_t d = 0; d < x.size(); ++d)
        ASSERT_LE(std::abs(out[d] - x[d]), step * 1.001f) << "kind " << int(kind) << " d " << d;
    }
    QuantizedRow zeros;
    for (float v : round_trip(kind, std::vector<float>(64, 0.0f), zeros)) EXPECT_EQ(v, 0.0f);
  }
  // fp8: e4m3's 3 mantissa bits, relative to the scale.
  std::vector<float> x;
  for (double v : testing::random_values(128, rng, -20, 20)) x.push_back(static_cast<float>(v));
  QuantizedRow q;
  const std::vector<float> out = round_trip(KvQuant::kFp8, x, q, 0.25f);
  for (size_t d = 0; d < x.size(); ++d) EXPECT_LE(std::abs(out[d] - x[d]), std::abs(x[d]) / 16 + 1e-3f) << d;
}

// One sequence's prefill: rope_kv_append writes K and V, attention reads them back.
std::vector<double> prefill_attention(KvQuant kind, const Tensor& qkv_in, int num_heads, int num_kv_heads,
                                      int head_dim, int block_size) {
  auto backend = make_cpu_backend();
  const int64_t tokens = qkv_in.view().size(0);
  const int64_t blocks = (tokens + block_size - 1) / block_size;
  Tensor qkv = testing::make_tensor(DType::kF32, qkv_in.shape(), testing::to_doubles(qkv_in.view()));
  std::vector<int32_t> positions(tokens), table(blocks);
  for (int32_t i = 0; i < tokens; ++i) positions[i] = i;
  for (int32_t b = 0; b < blocks; ++b) table[b] = static_cast<int32_t>(blocks - 1 - b);  // reversed blocks
  std::vector<int32_t> slots(tokens);
  for (int32_t i = 0; i < tokens; ++i) slots[i] = table[i / block_size] * block_size + i % block_size;
  std::vector<double> cos_sin;
  for (int64_t p = 0; p < tokens; ++p)
    for (int i = 0; i < head_dim; ++i)
      cos_sin.push_back(i < head_dim / 2 ? std::cos(0.1 * p * (i + 1)) : std::sin(0.1 * p * (i - head_dim / 2 + 1)));
  const int64_t row = kind == KvQuant::kInt4 ? head_dim / 2 : head_dim;
  const DType values = kind == KvQuant::kNone ? DType::kF32 : kind == KvQuant::kFp8 ? DType::kF8E4M3 : DType::kU8;
  Tensor k(cpu_allocator(), values, {blocks, num_kv_heads, block_size, row});
  Tensor v(cpu_allocator(), values, {blocks, num_kv_heads, block_size, row});
  Tensor k_scale(cpu_allocator(), DType::kF16, {blocks, num_kv_heads, block_size});
  Tensor v_scale(cpu_allocator(), DType::kF16, {blocks, num_kv_heads, block_size});
  Tensor k_zero(cpu_allocator(), DType::kU8, {blocks, num_kv_heads, block_size});
  Tensor v_zero(cpu_allocator(), DType::kU8, {blocks, num_kv_heads, block_size});
  KvQuantParams quant{.kind = kind};
  if (kind == KvQuant::kInt8 || kind == KvQuant::kInt4) {
    quant.k_scale = k_scale;
    quant.v_scale = v_scale;
    quant.k_zero = k_zero;
    quant.v_zero = v_zero;
  }
  quant.k_fp8_scale = 0.5f;
  quant.v_fp8_scale = 0.25f;
  Tensor positions_t = testing::make_i32({tokens}, positions), slots_t = testing::make_i32({tokens}, slots);
  Tensor cos_sin_t = testing::make_tensor(DType::kF32, {tokens, head_dim}, cos_sin);
  RopeKvAppendParams rope{.qkv = qkv, .positions = positions_t, .cos_sin = cos_sin_t, .num_heads = num_heads,
                          .num_kv_heads = num_kv_heads, .head_dim = head_dim, .slot_mapping = slots_t,
                          .k_cache = k, .v_cache = v, .kv_quant = quant};
  backend->rope_kv_append(rope);
  Tensor out(cpu_allocator(), DType::kF32, {tokens, int64_t{num_heads} * head_dim});
  Tensor tables = testing::make_i32({1, blocks}, table), starts = testing::make_i32({2}, {0, int32_t(tokens)});
  Tensor lens = testing::make_i32({1}, {int32_t(tokens)});
  AttentionParams a{.q = qkv.view().slice(1, 0, int64_t{num_heads} * head_dim), .k_cache = k, .v_cache = v,
                    .kv_quant = quant, .block_tables = tables, .query_start = starts, .context_lens = lens,
                    .out = out, .num_heads = num_heads, .num_kv_heads = num_kv_heads, .head_dim = head_dim,
                    .scale = 1.0f / std::sqrt(float(head_dim))};
  backend->attention(a);
  return testing::to_doubles(out.view());
}

TEST(KvQuant, AttentionOverEachFormatStaysClose) {
  std::mt19937 rng(11);
  const int heads = 4, kv_heads = 2, head_dim = 32, block_size = 16;
  Tensor qkv = testing::random_tensor(DType::kF32, {40, (heads + 2 * kv_heads) * head_dim}, rng, -2.0, 2.0);
  const std::vector<double> exact = prefill_attention(KvQuant::kNone, qkv, heads, kv_heads, head_dim, block_size);
  // Outputs are averages of values in [-2, 2]; the bound follows each format's step.
  for (auto [kind, atol] : {std::pair{KvQuant::kInt8, 0.03}, std::pair{KvQuant::kFp8, 0.12},
                            std::pair{KvQuant::kInt4, 0.45}}) {
    const std::vector<double> got = prefill_attention(kind, qkv, heads, kv_heads, head_dim, block_size);
    testing::expect_close(got, exact, atol, 0.0, "kv quant " + std::to_string(int(kind)));
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff += std::abs(got[i] - exact[i]);
    EXPECT_GT(diff, 0.0) << "the quantized cache must not be exact";
  }
}

TEST(KvQuant, ParamsAreChecked) {
  std::mt19937 rng(3);
  Tensor qkv = testing::random_tensor(DType::kF32, {4, 4 * 32}, rng);
  auto backend = make_cpu_backend();
  Tensor k(cpu_allocator(), DType::kF32, {1, 1, 16, 32}), v(cpu_allocator(), DType::kF32, {1, 1, 16, 32});
  Tensor pos = testing::make_i32({4}, {0, 1, 2, 3}), slots = testing::make_i32({4}, {0, 1, 2, 3});
  Tensor cos_sin = testing::random_tensor(DType::kF32, {4, 32}, rng);
  RopeKvAppendParams rope{.qkv = qkv, .positions = pos, .cos_sin = cos_sin, .num_heads = 2, .num_kv_heads = 1,
                          .head_dim = 32, .slot_mapping = slots, .k_cache = k, .v_cache = v,
                          .kv_quant = {.kind = KvQuant::kInt8}};
  try {
    backend->rope_kv_append(rope);
    FAIL() << "an f32 cache taken for int8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k_cache"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisk
