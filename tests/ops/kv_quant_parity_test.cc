// A quantized KV cache (KvQuant: int8, int4, fp8) on CUDA against the CPU reference.
//  - rope_kv_append quantizes each (token, kv head) row with the CPU's arithmetic: the codes,
//    scales and zeros must be bit-identical (without q / k norms; with them the fp32 sums of
//    squares add in another order, so codes may move by one step).
//  - attention over a quantized cache (the decode and the prefill kernels; codes, scales and
//    zeros random, NaN in every slot no sequence owns) against the CPU's attention over the
//    dequantized fp32 values. The kernels dequantize to f16 (one rounding of (code - zero) *
//    scale, relative 2^-11, fp8 values exact) and round P to f16 (u = 2^-12), so with |v| <= 2
//    an output moves by at most about 2u max|v| + 2^-11 max|v|: atol 2^-8, and the relative L2
//    error of the whole output stays under 2e-3 (rounding alone gives a few 1e-4). The prefill
//    kernel over bf16 q (head_dim 64 / 128, blocks of 8 keys or more) reads a bf16 copy of the
//    dequantized values instead (ops/attention.cc), rounded like a bf16 cache: bf16's limit, 4e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "attention_test_util.h"

namespace brisk::testing {
namespace {

const char* codes_name(KvQuant kind) {
  switch (kind) {
    case KvQuant::kInt8: return "int8";
    case KvQuant::kInt4: return "int4";
    case KvQuant::kFp8: return "fp8";
    default: return "none";
  }
}

// A quantized cache's tensors on the host (values and, for int8 / int4, scales and zeros).
struct QuantCache {
  Tensor k, v, k_scale, v_scale, k_zero, v_zero;

  QuantCache(KvQuant kind, int64_t blocks, int kv_heads, int block_size, int head_dim) {
    const int64_t row_bytes = kind == KvQuant::kInt4 ? head_dim / 2 : head_dim;
    const DType codes = kind == KvQuant::kFp8 ? DType::kF8E4M3 : DType::kU8;
    k = Tensor(cpu_allocator(), codes, {blocks, kv_heads, block_size, row_bytes});
    v = Tensor(cpu_allocator(), codes, {blocks, kv_heads, block_size, row_bytes});
    std::memset(k.view().data(), 0, k.view().num_elements());
    std::memset(v.view().data(), 0, v.view().num_elements());
    if (kind == KvQuant::kFp8) return;
    for (Tensor* t : {&k_scale, &v_scale}) {
      *t = Tensor(cpu_allocator(), DType::kF16, {blocks, kv_heads, block_size});
      std::memset(t->view().data(), 0, t->view().num_elements() * 2);
    }
    for (Tensor* t : {&k_zero, &v_zero}) {
      *t = Tensor(cpu_allocator(), DType::kU8, {blocks, kv_heads, block_size});
      std::memset(t->view().data(), 0, t->view().num_elements());
    }
  }

  // The params of these tensors (or of `device`'s copies of them).
  KvQuantParams params(KvQuant kind, const QuantCache* device = nullptr) const {
    const QuantCache& c = device != nullptr ? *device : *this;
    KvQuantParams p;
    p.kind = kind;
    if (kind == KvQuant::kInt8 || kind == KvQuant::kInt4) {
      p.k_scale = c.k_scale;
      p.v_scale = c.v_scale;
      p.k_zero = c.k_zero;
      p.v_zero = c.v_zero;
    }
    p.k_fp8_scale = kind == KvQuant::kFp8 ? 0.75f : 1.0f;
    p.v_fp8_scale = kind == KvQuant::kFp8 ? 1.25f : 1.0f;
    return p;
  }

  QuantCache to_device_copy(KvQuant kind) const {
    QuantCache d;
    d.k = to_device(k);
    d.v = to_device(v);
    if (kind != KvQuant::kFp8) {
      d.k_scale = to_device(k_scale);
      d.v_scale = to_device(v_scale);
      d.k_zero = to_device(k_zero);
      d.v_zero = to_device(v_zero);
    }
    return d;
  }

  QuantCache() = default;
};

std::vector<uint8_t> host_bytes(const TensorView& device) {
  const Tensor host = to_host(device);
  const auto* p = static_cast<const uint8_t*>(host.view().data());
  return std::vector<uint8_t>(p, p + dtype_bytes(host.dtype(), host.view().num_elements()));
}

// rope_kv_append's parameters without q / k norms: the new tokens of qkv rotated and quantized into
// k_cache / v_cache.
RopeKvAppendParams rope_params(TensorView qkv, TensorView positions, TensorView cos_sin, TensorView slots,
                               int num_heads, int num_kv_heads, int head_dim, TensorView k_cache,
                               TensorView v_cache, const KvQuantParams& quant) {
  RopeKvAppendParams p;
  p.qkv = qkv;
  p.positions = positions;
  p.cos_sin = cos_sin;
  p.num_heads = num_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_dim = head_dim;
  p.slot_mapping = slots;
  p.k_cache = k_cache;
  p.v_cache = v_cache;
  p.kv_quant = quant;
  return p;
}

// ---- rope_kv_append -------------------------------------------------------------------------

struct AppendCase {
  int num_heads, num_kv_heads, head_dim, block_size;
  int64_t num_tokens;
  bool qk_norm;
};

void check_append(KvQuant kind, const AppendCase& c) {
  std::mt19937 rng(5 + c.head_dim + c.num_kv_heads);
  const int64_t width = int64_t{c.num_heads + 2 * c.num_kv_heads} * c.head_dim;
  const int64_t num_blocks = (c.num_tokens + c.block_size - 1) / c.block_size + 2;
  Tensor qkv = random_tensor(DType::kBF16, {c.num_tokens, width}, rng, -2, 2);
  Tensor cos_sin = make_cos_sin(300, c.head_dim);
  std::vector<int32_t> positions(c.num_tokens), slots(c.num_tokens);
  std::uniform_int_distribution<int32_t> position(0, 299);
  for (int64_t t = 0; t < c.num_tokens; ++t) {
    positions[t] = position(rng);
    slots[t] = t % 5 == 4 ? -1 : static_cast<int32_t>(t + c.block_size);  // every fifth skipped
  }
  Tensor positions_t = make_i32({c.num_tokens}, positions), slots_t = make_i32({c.num_tokens}, slots);
  Tensor norm = random_tensor(DType::kBF16, {c.head_dim}, rng, 0.5, 1.5);
  QuantCache cpu(kind, num_blocks, c.num_kv_heads, c.block_size, c.head_dim);
  const QuantCache gpu = cpu.to_device_copy(kind);

  auto params = [&](TensorView qkv_v, TensorView pos, TensorView cs, TensorView n, TensorView sl,
                    const QuantCache& cache, const QuantCache* device) {
    const QuantCache& target = device != nullptr ? *device : cache;
    RopeKvAppendParams p = rope_params(qkv_v, pos, cs, sl, c.num_heads, c.num_kv_heads, c.head_dim, target.k,
                                       target.v, cache.params(kind, device));
    if (c.qk_norm) {
      p.q_norm = n;
      p.k_norm = n;
    }
    return p;
  };
  Tensor qkv_cpu = clone(qkv);
  cpu_backend().rope_kv_append(params(qkv_cpu, positions_t, cos_sin, norm, slots_t, cpu, nullptr));
  Tensor qkv_d = to_device(qkv), pos_d = to_device(positions_t), cs_d = to_device(cos_sin);
  Tensor norm_d = to_device(norm), sl_d = to_device(slots_t);
  cuda_backend().rope_kv_append(params(qkv_d, pos_d, cs_d, norm_d, sl_d, cpu, &gpu));

  const std::string what = std::string("rope_kv_append ") + codes_name(kind) + " heads " +
                           std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads) + " hd " +
                           std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size) +
                           (c.qk_norm ? " qk_norm" : "");
  expect_close(host_doubles(qkv_d), to_doubles(qkv_cpu), 1e-5, output_rtol(DType::kBF16), what + " qkv");
  std::vector<std::pair<const char*, std::pair<const Tensor*, const Tensor*>>> parts = {
      {"k codes", {&cpu.k, &gpu.k}}, {"v codes", {&cpu.v, &gpu.v}}};
  if (kind != KvQuant::kFp8) {
    parts.push_back({"k scales", {&cpu.k_scale, &gpu.k_scale}});
    parts.push_back({"v scales", {&cpu.v_scale, &gpu.v_scale}});
    parts.push_back({"k zeros", {&cpu.k_zero, &gpu.k_zero}});
    parts.push_back({"v zeros", {&cpu.v_zero, &gpu.v_zero}});
  }
  for (const auto& [name, tensors] : parts) {
    const auto* expected = static_cast<const uint8_t*>(tensors.first->view().data());
    const std::vector<uint8_t> actual = host_bytes(*tensors.second);
    int64_t differ = 0, first = -1;
    for (size_t i = 0; i < actual.size(); ++i) {
      if (actual[i] == expected[i]) continue;
      if (first < 0) first = static_cast<int64_t>(i);
      ++differ;
    }
    // With norms a row's scale may move by an ulp and its codes by a step, rarely.
    const double allowed = c.qk_norm ? 0.02 * static_cast<double>(actual.size()) : 0.0;
    EXPECT_LE(static_cast<double>(differ), allowed)
        << what << " " << name << ": " << differ << " of " << actual.size() << " bytes differ, first at " << first
        << " (cpu " << int{first >= 0 ? expected[first] : 0} << ", cuda " << int{first >= 0 ? actual[first] : 0}
        << ")";
  }
}

class QuantizedKv : public ::testing::TestWithParam<KvQuant> {};

TEST_P(QuantizedKv, RopeKvAppendMatchesCpuBits) {
  const AppendCase cases[] = {
      {4, 4, 64, 16, 9, false}, {8, 2, 128, 16, 33, false}, {32, 8, 128, 16, 1, false},
      {8, 1, 256, 16, 3, false}, {8, 2, 128, 4, 17, true},
  };
  for (const AppendCase& c : cases) check_append(GetParam(), c);
}

// ---- attention ------------------------------------------------------------------------------

// Random codes and row parameters for every slot the sequences own; NaN (f16 scales, fp8 codes)
// in every other slot, which the kernels must never let in.
void fill_cache(KvQuant kind, const AttentionCase& c, const AttentionInputs& in, QuantCache& cache, std::mt19937& rng) {
  const int64_t blocks = cache.k.shape()[0];
  const int64_t row_bytes = cache.k.shape()[3];
  std::vector<bool> owned(blocks * c.num_kv_heads * c.block_size, false);
  const int64_t max_blocks = in.block_tables.shape()[1];
  const auto* tables = in.block_tables.data_as<const int32_t>();
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    for (int key = 0; key < c.seqs[s].context_len; ++key) {
      const int64_t id = tables[s * max_blocks + key / c.block_size];
      for (int h = 0; h < c.num_kv_heads; ++h)
        owned[(id * c.num_kv_heads + h) * c.block_size + key % c.block_size] = true;
    }
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_real_distribution<float> int8_scale(0.004f, 0.008f), int4_scale(0.08f, 0.15f);
  std::uniform_int_distribution<int> int8_zero(64, 192), int4_zero(4, 11);
  for (Tensor* codes : {&cache.k, &cache.v}) {
    auto* bytes = static_cast<uint8_t*>(codes->view().data());
    const bool value = codes == &cache.v;
    for (int64_t row = 0; row < static_cast<int64_t>(owned.size()); ++row) {
      uint8_t* r = bytes + row * row_bytes;
      for (int64_t b = 0; b < row_bytes; ++b) {
        if (kind == KvQuant::kFp8) r[b] = owned[row] ? float_to_e4m3(unit(rng)) : 0x7F;
        else r[b] = static_cast<uint8_t>(byte(rng));
      }
      if (kind == KvQuant::kFp8) continue;
      Half* scale = (value ? cache.v_scale : cache.k_scale).data_as<Half>() + row;
      uint8_t* zero = (value ? cache.v_zero : cache.k_zero).data_as<uint8_t>() + row;
      const bool int4 = kind == KvQuant::kInt4;
      *scale = owned[row] ? float_to_half(int4 ? int4_scale(rng) : int8_scale(rng)) : Half{0x7E00};
      *zero = static_cast<uint8_t>(int4 ? int4_zero(rng) : int8_zero(rng));
    }
  }
}

void check_quant_attention(KvQuant kind, const AttentionCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  AttentionInputs in = make_attention_inputs(DType::kBF16, c, rng);
  QuantCache cache(kind, in.k_cache.shape()[0], c.num_kv_heads, c.block_size, c.head_dim);
  fill_cache(kind, c, in, cache, rng);
  const Shape out_shape{in.num_tokens, int64_t{c.num_heads} * c.head_dim};
  Tensor expected = zeros(DType::kF32, out_shape);
  AttentionParams cpu_params = make_attention_params(c, in, in.qkv, cache.k, cache.v, in.block_tables,
                                                     in.query_start, in.context_lens, expected);
  cpu_params.kv_quant = cache.params(kind);
  cpu_backend().attention(cpu_params);

  const QuantCache gpu = cache.to_device_copy(kind);
  Tensor qkv_d = to_device(in.qkv), tables_d = to_device(in.block_tables);
  Tensor starts_d = to_device(in.query_start), lens_d = to_device(in.context_lens);
  Tensor out_d = to_device(make_tensor(DType::kBF16, out_shape, std::vector<double>(out_shape.num_elements(), NAN)));
  AttentionParams params = make_attention_params(c, in, qkv_d, gpu.k, gpu.v, tables_d, starts_d, lens_d, out_d);
  params.kv_quant = cache.params(kind, &gpu);
  cuda_backend().attention(params);

  const bool decode = uses_decode_kernel(c, in.num_tokens, in.max_query);
  const std::string what = describe(DType::kBF16, c) + " " + codes_name(kind) + (decode ? " [decode]" : " [prefill]");
  const std::vector<double> actual = host_doubles(out_d);
  const std::vector<double> reference = to_doubles(expected);
  expect_close(actual, reference, 1.0 / 256, output_rtol(DType::kBF16), what);
  double error = 0, norm = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    error += (actual[i] - reference[i]) * (actual[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  const bool bf16_copy = !decode && (c.head_dim == 64 || c.head_dim == 128) && c.block_size >= 8;
  EXPECT_LE(std::sqrt(error / std::max(norm, 1e-30)), bf16_copy ? 4e-3 : 2e-3) << what << ": relative L2 error";
}

TEST_P(QuantizedKv, DecodeAttentionMatchesCpu) {
  unsigned seed = 21;
  const std::vector<AttentionCase> cases = {
      // heads, kv heads, head_dim, block size, window, {q tokens, context} per sequence
      {32, 8, 128, 16, 0, {{1, 1}, {1, 15}, {1, 17}, {1, 100}, {1, 1000}, {1, 4097}}},
      {16, 2, 64, 16, 0, {{1, 1}, {1, 33}, {1, 300}, {1, 2050}}},
      {4, 2, 256, 16, 0, {{1, 5}, {1, 129}, {1, 700}}},
      {16, 8, 128, 4, 0, {{1, 3}, {1, 67}}},
      {8, 4, 64, 32, 0, {{1, 31}, {1, 999}}},
      {32, 8, 128, 16, 0, {{2, 50}, {8, 8}, {5, 1200}}},
      {8, 2, 128, 16, 100, {{1, 1000}, {4, 600}}},
      {8, 2, 128, 16, 0, {{1, 32768}, {1, 20000}, {1, 7}}},             // splits
      {32, 8, 128, 16, 0, {{1, 300}, {1, 2}, {1, 17}}, true, 32768},   // context bound >> lengths
      // Blocks holding whole runs of a tile (one address per run): 64 keys (the default), 128.
      {32, 8, 128, 64, 0, {{1, 1}, {1, 65}, {1, 1000}, {1, 4097}}},
      {16, 2, 64, 128, 0, {{1, 70}, {1, 2050}}},
      {8, 2, 128, 64, 0, {{1, 32768}, {1, 200}, {3, 129}}},
  };
  for (const AttentionCase& c : cases) check_quant_attention(GetParam(), c, seed++);
}

// rope_append_attention over a quantized cache: the decode kernel's fused append (decode batches
// with contexts over 1024 keys) against CUDA's separate rope_kv_append and attention, which the
// tests above hold to the CPU: the same codes, scales and zeros byte for byte, the same out value
// for value, and qkv left unrotated (proof that it fused). New tokens are each sequence's last;
// every seventh slot is skipped (< 0).
void check_fused_append(KvQuant kind, const AttentionCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  AttentionInputs in = make_attention_inputs(DType::kBF16, c, rng);
  QuantCache cache(kind, in.k_cache.shape()[0], c.num_kv_heads, c.block_size, c.head_dim);
  fill_cache(kind, c, in, cache, rng);
  NewTokenSlots appends =
      new_token_slots(c.seqs, in.block_tables.data_as<const int32_t>(), in.block_tables.shape()[1], c.block_size);
  for (size_t t = 6; t < appends.slots.size(); t += 7) appends.slots[t] = -1;
  const Tensor positions_d = to_device(make_i32({in.num_tokens}, appends.positions));
  const Tensor slots_d = to_device(make_i32({in.num_tokens}, appends.slots));
  const Tensor cos_sin_d = to_device(make_cos_sin(in.max_context, c.head_dim));
  const Tensor tables_d = to_device(in.block_tables), starts_d = to_device(in.query_start);
  const Tensor lens_d = to_device(in.context_lens);
  const Shape out_shape{in.num_tokens, int64_t{c.num_heads} * c.head_dim};
  struct Run {
    QuantCache cache;
    Tensor qkv, out;
  };
  auto run = [&](bool fused) {
    Run r{cache.to_device_copy(kind), to_device(in.qkv), to_device(zeros(DType::kBF16, out_shape))};
    const RopeKvAppendParams rope = rope_params(r.qkv, positions_d, cos_sin_d, slots_d, c.num_heads, c.num_kv_heads,
                                                c.head_dim, r.cache.k, r.cache.v, cache.params(kind, &r.cache));
    AttentionParams attn = make_attention_params(c, in, r.qkv, r.cache.k, r.cache.v, tables_d, starts_d, lens_d, r.out);
    attn.kv_quant = rope.kv_quant;
    if (fused) {
      cuda_backend().rope_append_attention(rope, attn);
    } else {
      cuda_backend().rope_kv_append(rope);
      cuda_backend().attention(attn);
    }
    return r;
  };
  const Run fused = run(true), separate = run(false);
  const std::string what = describe(DType::kBF16, c) + " " + codes_name(kind) + " fused append";
  EXPECT_EQ(host_doubles(fused.qkv), to_doubles(in.qkv)) << what << ": qkv rotated, so not fused";
  std::vector<std::pair<const char*, std::pair<const Tensor*, const Tensor*>>> parts = {
      {"k codes", {&fused.cache.k, &separate.cache.k}}, {"v codes", {&fused.cache.v, &separate.cache.v}}};
  if (kind != KvQuant::kFp8) {
    parts.push_back({"k scales", {&fused.cache.k_scale, &separate.cache.k_scale}});
    parts.push_back({"v scales", {&fused.cache.v_scale, &separate.cache.v_scale}});
    parts.push_back({"k zeros", {&fused.cache.k_zero, &separate.cache.k_zero}});
    parts.push_back({"v zeros", {&fused.cache.v_zero, &separate.cache.v_zero}});
  }
  for (const auto& [name, tensors] : parts)
    EXPECT_TRUE(host_bytes(*tensors.first) == host_bytes(*tensors.second)) << what << ": " << name << " differ";
  EXPECT_EQ(host_doubles(fused.out), host_doubles(separate.out)) << what << ": out";
}

TEST_P(QuantizedKv, FusedAppendMatchesSeparateOps) {
  unsigned seed = 61;
  const std::vector<AttentionCase> cases = {
      // heads, kv heads, head_dim, block size, window, {new tokens, context} per sequence
      {32, 8, 128, 16, 0, {{1, 4097}, {1, 1500}, {1, 1025}, {1, 2000}}},
      {16, 2, 64, 16, 0, {{8, 2000}, {3, 1100}, {1, 1030}}},  // several row chunks write the same rows
      {8, 2, 128, 64, 0, {{1, 32768}, {2, 5000}}},            // splits
      {4, 2, 256, 16, 0, {{1, 1500}, {2, 3000}}},             // a row over four warps
  };
  for (const AttentionCase& c : cases) check_fused_append(GetParam(), c, seed++);
}

TEST_P(QuantizedKv, PrefillAttentionMatchesCpu) {
  unsigned seed = 41;
  const std::vector<AttentionCase> cases = {
      {32, 8, 128, 16, 0, {{100, 100}, {17, 500}, {1, 40}}},
      {16, 2, 64, 16, 0, {{64, 64}, {300, 1000}}},
      {4, 2, 256, 16, 0, {{40, 40}, {9, 300}}},
      {8, 4, 128, 4, 0, {{33, 70}}},
      {8, 2, 128, 32, 64, {{200, 700}}},
  };
  for (const AttentionCase& c : cases) check_quant_attention(GetParam(), c, seed++);
}

INSTANTIATE_TEST_SUITE_P(Codes, QuantizedKv, ::testing::Values(KvQuant::kInt8, KvQuant::kInt4, KvQuant::kFp8),
                         [](const auto& info) { return std::string(codes_name(info.param)); });

// Row parameters of a benchmark's int8 / int4 cache (8 kv heads): scale 0.01, zero 0.
struct PerfRowParams {
  Tensor k_scale, v_scale, k_zero, v_zero;

  void set(AttentionParams& p, int64_t blocks, int block_size) {
    const Shape shape{blocks, 8, block_size};
    const Tensor scale = make_tensor(DType::kF16, shape, std::vector<double>(shape.num_elements(), 0.01));
    Tensor zero(cpu_allocator(), DType::kU8, shape);
    std::memset(zero.view().data(), 0, shape.num_elements());
    k_scale = to_device(scale);
    v_scale = to_device(scale);
    k_zero = to_device(zero);
    v_zero = to_device(zero);
    p.kv_quant.k_scale = k_scale;
    p.kv_quant.v_scale = v_scale;
    p.kv_quant.k_zero = k_zero;
    p.kv_quant.v_zero = v_zero;
  }
};

// Decode attention over a quantized cache at the benchmark shapes (H200: 32 / 8 heads,
// head_dim 128): bandwidth of the bytes actually read (codes, row parameters, q and out), beside
// the bf16 cache's in the same run. "spread": 64 x 4096 with the blocks spread over a cache of
// 32 GiB in bf16 (16 GiB int8), as the engine's are over its KV memory, where address translation
// misses that the compact cache never has may cost. "+append": the call a decode step makes, each
// sequence's new key and value rotated and appended before the attention (same bytes counted).
TEST(QuantizedKvPerf, DecodeAttention) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  const int block_size = perf_block_size();
  struct PerfShape {
    int seqs, context;
    int64_t cache_bytes;  // of the bf16 cache (0: the batch's blocks only)
  };
  // The two shapes, a batch in waves of blocks (192) and one in a single wave (8), then the
  // issue's batch spread over a large cache.
  for (auto [seqs, context, cache_bytes] : {PerfShape{64, 4096, 0}, PerfShape{1, 32768, 0}, PerfShape{192, 4608, 0},
                                            PerfShape{8, 4096, 0}, PerfShape{64, 4096, int64_t{32} << 30}}) {
    const int64_t cache_blocks = cache_bytes / (2 * int64_t{8} * block_size * 128 * 2);
    // One batch for every kind (the quantized caches take its block table, lengths and q).
    const DeviceAttentionBatch b =
        make_device_attention_batch(std::vector<Seq>(seqs, Seq{1, context}), 32, 8, 128, block_size, cache_blocks);
    const Tensor cos_sin = to_device(make_cos_sin(cache_blocks > 0 ? 1 : context, 128));  // "+append" only
    const int64_t blocks = b.k_cache.shape()[0];
    Allocator& alloc = cuda_backend().allocator();
    for (KvQuant kind : {KvQuant::kNone, KvQuant::kInt8, KvQuant::kInt4, KvQuant::kFp8}) {
      const int64_t row_bytes = kind == KvQuant::kInt4 ? 64 : kind == KvQuant::kNone ? 256 : 128;
      Tensor k, v;
      PerfRowParams row_params;
      AttentionParams p = b.params;
      if (kind != KvQuant::kNone) {
        const DType codes = kind == KvQuant::kFp8 ? DType::kF8E4M3 : DType::kU8;
        k = Tensor(alloc, codes, {blocks, 8, block_size, row_bytes});
        v = Tensor(alloc, codes, {blocks, 8, block_size, row_bytes});
        // Random bf16 bits make finite codes of every kind (fp8 NaN codes aside: 0x7F / 0xFF are
        // rare and would only make the output NaN, not the kernel slower).
        for (Tensor* t : {&k, &v}) {
          Tensor bits(alloc, DType::kBF16, {blocks, 8, block_size, row_bytes / 2});
          fill_random(bits, t == &k ? 4 : 5);
          cuda_backend().copy(TensorView(t->view().data(), DType::kBF16, bits.shape(), Device::kCuda), bits);
        }
        p.k_cache = k;
        p.v_cache = v;
        p.kv_quant.kind = kind;
        if (kind != KvQuant::kFp8) row_params.set(p, blocks, block_size);
      }
      const double params_bytes = kind == KvQuant::kInt8 || kind == KvQuant::kInt4 ? 2 * 3.0 : 0.0;
      const double bytes = double(seqs) * context * 8 * (2 * row_bytes + params_bytes) +
                           double(seqs) * 32 * 128 * 2 * 2;  // q and out
      const std::string shape =
          std::to_string(seqs) + " x " + std::to_string(context) + (cache_blocks > 0 ? " spread" : "");
      report_perf("decode_attention", std::string(codes_name(kind)) + " 32/8 hd128 " + shape,
                  bytes, 0, [&] { cuda_backend().attention(p); });
      if (cache_blocks > 0) continue;
      // The call a decode step makes: each sequence's new key and value (its last token) rotated,
      // quantized and appended, then the attention (one launch where the backend fuses them).
      const RopeKvAppendParams rope =
          rope_params(b.qkv, b.positions, cos_sin, b.slot_mapping, 32, 8, 128, p.k_cache, p.v_cache, p.kv_quant);
      report_perf("decode_attention", std::string(codes_name(kind)) + " 32/8 hd128 " + shape + " +append",
                  bytes, 0, [&] { cuda_backend().rope_append_attention(rope, p); });
    }
  }
}

// Prefill attention over an int8 / fp8 cache against the bf16 cache's (TFLOP/s of useful FLOPs,
// causal): the target is 85% of bf16's.
TEST(QuantizedKvPerf, PrefillAttention) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  const int block_size = perf_block_size();
  for (KvQuant kind : {KvQuant::kNone, KvQuant::kInt8, KvQuant::kFp8}) {
    std::vector<Seq> batch(4, Seq{4096, 4096});
    DeviceAttentionBatch b = make_device_attention_batch(batch, 32, 8, 128, block_size);
    const int64_t blocks = b.k_cache.shape()[0];
    Allocator& alloc = cuda_backend().allocator();
    Tensor k, v;
    PerfRowParams row_params;
    AttentionParams p = b.params;
    if (kind != KvQuant::kNone) {
      const DType codes = kind == KvQuant::kFp8 ? DType::kF8E4M3 : DType::kU8;
      k = Tensor(alloc, codes, {blocks, 8, block_size, 128});
      v = Tensor(alloc, codes, {blocks, 8, block_size, 128});
      // The bf16 cache's bytes as codes.
      const Shape half_rows{blocks, 8, block_size, 64};
      cuda_backend().copy(TensorView(k.view().data(), DType::kBF16, half_rows, Device::kCuda),
                          TensorView(b.k_cache.view().data(), DType::kBF16, half_rows, Device::kCuda));
      cuda_backend().copy(TensorView(v.view().data(), DType::kBF16, half_rows, Device::kCuda),
                          TensorView(b.v_cache.view().data(), DType::kBF16, half_rows, Device::kCuda));
      p.k_cache = k;
      p.v_cache = v;
      p.kv_quant.kind = kind;
      if (kind == KvQuant::kInt8) row_params.set(p, blocks, block_size);
    }
    const double flops = 4.0 * 4 * 32 * 128 * (4096.0 * 4097 / 2);
    report_perf("prefill_attention", std::string(codes_name(kind)) + " 32/8 hd128 4 x 4096 causal", 0, flops,
                [&] { cuda_backend().attention(p); }, 10);
  }
}

}  // namespace
}  // namespace brisk::testing
