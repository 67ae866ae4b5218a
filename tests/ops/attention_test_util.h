// Shared pieces of the attention parity tests (attention_parity_test.cc: the op as a whole,
// decode_attention_parity_test.cc: the decode kernel): ragged batches over a shuffled paged cache,
// the CPU reference, and the tolerances of each CUDA kernel.
//
// Tolerances. Inputs are uniform in [-1, 1], so outputs are convex combinations of v rows in
// [-1, 1]. Both kernels differ from the CPU by fp32 summation order, exp2 vs exp and one rounding
// of the output: |cuda - cpu| <= atol + rtol * |cpu|, rtol bf16 1/128, f16 1/1024.
//  - generic kernel (prefill; fp32 scores and weights): atol 1e-4.
//  - decode and prefill kernels (tensor cores): the softmax weights p are rounded to the KV dtype (half an ulp,
//    u = 2^-9 bf16, 2^-12 f16) before P V. Where the row sums add the rounded weights (decode) the
//    output stays a convex combination whose weights moved by at most u relative: |error| <= u *
//    max|v - out| <= 2u; where they add the fp32 weights (Hopper prefill) the error is
//    sum (p_r - p) v / sum p: |error| <= u * max|v| <= u (random data: |v| <= 1).
//    atol = 2u (bf16 2^-8, f16 2^-11). That bound is loose for long contexts (errors average
//    out), so their cases also check the relative L2 error of the whole output,
//    ||cuda - cpu|| / ||cpu||: rounding p and the output give about 0.16% (bf16) and 0.02% (f16);
//    the limits are 0.4% and 0.05%. Dropping one key of 4096 moves it by about 1.6%.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "ops_test_util.h"

namespace brisk::testing {

struct Seq {
  int q_len, context_len;
};

// The new tokens of each sequence (its last q_len positions) and their cache slots under the
// sequences' block tables (tables [num_seqs, max_blocks]), in token order.
struct NewTokenSlots {
  std::vector<int32_t> positions, slots;
};
inline NewTokenSlots new_token_slots(const std::vector<Seq>& seqs, const int32_t* tables, int64_t max_blocks,
                                     int block_size) {
  NewTokenSlots n;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int position = seqs[s].context_len - seqs[s].q_len; position < seqs[s].context_len; ++position) {
      n.positions.push_back(position);
      n.slots.push_back(tables[s * max_blocks + position / block_size] * block_size + position % block_size);
    }
  }
  return n;
}

struct AttentionCase {
  int num_heads, num_kv_heads, head_dim, block_size, sliding_window;
  std::vector<Seq> seqs;
  bool hints = true;         // pass max_query_len / max_context_len
  int max_context_hint = 0;  // > 0: pass this bound instead of the true maximum (graph capture)
  bool nan_past_context = false;  // cache slots past each sequence's context and unused blocks hold NaN
};

// Host inputs of one case: q is a strided slice of a wider qkv-like tensor, blocks are shuffled.
struct AttentionInputs {
  Tensor qkv, k_cache, v_cache, block_tables, query_start, context_lens;
  int64_t num_tokens = 0;
  int max_query = 0, max_context = 0;
};

inline AttentionInputs make_attention_inputs(DType dtype, const AttentionCase& c, std::mt19937& rng) {
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
  if (c.nan_past_context) {  // what a cache may hold where nothing was written: kernels must not let it in
    const uint16_t nan_bits = dtype == DType::kBF16 ? 0x7FC0 : 0x7E00;
    const int64_t block_elements = int64_t{c.num_kv_heads} * c.block_size * c.head_dim;
    std::vector<bool> used(num_cache_blocks, false);
    for (int32_t id : tables) used[id] = true;  // (unused table columns hold 0: block 0 stays finite)
    for (size_t s = 0; s < c.seqs.size(); ++s) {
      const int len = c.seqs[s].context_len, blocks = (len + c.block_size - 1) / c.block_size;
      if (blocks == 0 || len % c.block_size == 0) continue;
      const int64_t id = tables[s * max_blocks + blocks - 1];
      for (Tensor* cache : {&in.k_cache, &in.v_cache})
        for (int h = 0; h < c.num_kv_heads; ++h)
          for (int slot = len % c.block_size; slot < c.block_size; ++slot)
            std::fill_n(cache->data_as<uint16_t>() + ((id * c.num_kv_heads + h) * c.block_size + slot) * c.head_dim,
                        c.head_dim, nan_bits);
    }
    for (int id = 0; id < num_cache_blocks; ++id) {
      if (used[id]) continue;
      for (Tensor* cache : {&in.k_cache, &in.v_cache})
        std::fill_n(cache->data_as<uint16_t>() + id * block_elements, block_elements, nan_bits);
    }
  }
  in.block_tables = make_i32({static_cast<int64_t>(c.seqs.size()), max_blocks}, tables);
  in.query_start = make_i32({static_cast<int64_t>(starts.size())}, starts);
  in.context_lens = make_i32({static_cast<int64_t>(lens.size())}, lens);
  return in;
}

inline AttentionParams make_attention_params(const AttentionCase& c, const AttentionInputs& in,
                                             TensorView qkv, TensorView k, TensorView v,
                                             TensorView tables, TensorView starts, TensorView lens,
                                             TensorView out) {
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
  p.max_context_len = c.hints ? (c.max_context_hint > 0 ? c.max_context_hint : in.max_context) : 0;
  return p;
}

// Whether the CUDA op runs the case on the decode kernel (ops/attention.cc: use_decode_kernel).
inline bool uses_decode_kernel(const AttentionCase& c, int64_t num_tokens, int max_query) {
  const int64_t bound = c.hints ? max_query : num_tokens;
  return bound <= 8 && (c.head_dim == 64 || c.head_dim == 128 || c.head_dim == 256) &&
         std::has_single_bit(static_cast<unsigned>(c.block_size));
}

// Whether the CUDA op runs the case on the prefill kernel (ops/attention.cc: use_prefill_kernel;
// these tests use the same dtype for q, KV and out).
inline bool uses_prefill_kernel(DType dtype, const AttentionCase& c, int64_t num_tokens, int max_query) {
  return !uses_decode_kernel(c, num_tokens, max_query) && (dtype == DType::kBF16 || dtype == DType::kF16) &&
         (c.head_dim == 64 || c.head_dim == 128 || c.head_dim == 256) &&
         std::has_single_bit(static_cast<unsigned>(c.block_size));
}

inline std::string describe(DType dtype, const AttentionCase& c) {
  std::string what = "attention " + dtype_str(dtype) + " heads " + std::to_string(c.num_heads) + "/" +
                     std::to_string(c.num_kv_heads) + " hd " + std::to_string(c.head_dim) + " bs " +
                     std::to_string(c.block_size) + " window " + std::to_string(c.sliding_window) +
                     " seqs";
  for (const Seq& s : c.seqs) what += " (" + std::to_string(s.q_len) + "/" + std::to_string(s.context_len) + ")";
  if (c.max_context_hint > 0) what += " context hint " + std::to_string(c.max_context_hint);
  return what;
}

// Runs the case on both backends (the CUDA output poisoned first) and compares (see the top).
inline void check_attention(DType dtype, const AttentionCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  AttentionInputs in = make_attention_inputs(dtype, c, rng);
  const Shape out_shape{in.num_tokens, int64_t{c.num_heads} * c.head_dim};
  Tensor expected = zeros(DType::kF32, out_shape);
  cpu_backend().attention(make_attention_params(c, in, in.qkv, in.k_cache, in.v_cache,
                                                in.block_tables, in.query_start, in.context_lens,
                                                expected));
  Tensor qkv_d = to_device(in.qkv), k_d = to_device(in.k_cache), v_d = to_device(in.v_cache);
  Tensor tables_d = to_device(in.block_tables), starts_d = to_device(in.query_start);
  Tensor lens_d = to_device(in.context_lens);
  Tensor out_d = to_device(make_tensor(dtype, out_shape, std::vector<double>(out_shape.num_elements(), NAN)));
  cuda_backend().attention(make_attention_params(c, in, qkv_d, k_d, v_d, tables_d, starts_d, lens_d, out_d));
  const std::string what = describe(dtype, c);
  const std::vector<double> actual = host_doubles(out_d);
  const std::vector<double> reference = to_doubles(expected);
  const bool decode = uses_decode_kernel(c, in.num_tokens, in.max_query);
  if (!decode && !uses_prefill_kernel(dtype, c, in.num_tokens, in.max_query)) {
    expect_close(actual, reference, 1e-4, output_rtol(dtype), what);
    return;
  }
  const std::string kernel = decode ? " [decode kernel]" : " [prefill kernel]";
  const double u = dtype == DType::kBF16 ? 1.0 / 512 : 1.0 / 4096;
  expect_close(actual, reference, 2 * u, output_rtol(dtype), what + kernel);
  double error = 0, norm = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    error += (actual[i] - reference[i]) * (actual[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  const double relative = std::sqrt(error / std::max(norm, 1e-30));
  EXPECT_LE(relative, dtype == DType::kBF16 ? 4e-3 : 5e-4) << what << kernel << ": relative L2 error";
}

// A benchmark batch made on the device: bf16, random K / V / q (q a slice of a qkv-like tensor),
// each sequence's blocks in a random order; the returned params (hints set) stay valid while the
// batch lives. With cache_blocks past the batch's own, the blocks are spread over a cache of that
// many blocks, as a serving engine's are over its whole KV memory.
struct DeviceAttentionBatch {
  Tensor block_tables, query_start, context_lens, k_cache, v_cache, qkv, out;
  Tensor positions, slot_mapping;  // of the new tokens (the last q_len of each context), for appends
  AttentionParams params;
};

inline DeviceAttentionBatch make_device_attention_batch(const std::vector<Seq>& seqs, int num_heads,
                                                         int num_kv_heads, int head_dim, int block_size,
                                                         int64_t cache_blocks = 0) {
  Allocator& alloc = cuda_backend().allocator();
  const int num_seqs = static_cast<int>(seqs.size());
  int max_blocks = 0, max_q = 0, max_context = 0;
  int64_t num_tokens = 0;
  for (const Seq& s : seqs) {
    max_blocks = std::max(max_blocks, (s.context_len + block_size - 1) / block_size);
    max_q = std::max(max_q, s.q_len);
    max_context = std::max(max_context, s.context_len);
    num_tokens += s.q_len;
  }
  const int64_t num_blocks = std::max(int64_t{num_seqs} * max_blocks, cache_blocks);
  std::vector<int32_t> ids(num_blocks), starts{0}, lens;
  for (int64_t i = 0; i < num_blocks; ++i) ids[i] = static_cast<int32_t>(i);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(3));
  ids.resize(int64_t{num_seqs} * max_blocks);
  int32_t start = 0;
  for (const Seq& s : seqs) {
    start += s.q_len;
    starts.push_back(start);
    lens.push_back(s.context_len);
  }
  const NewTokenSlots appends = new_token_slots(seqs, ids.data(), max_blocks, block_size);
  DeviceAttentionBatch b;
  b.block_tables = to_device(TensorView(ids.data(), DType::kI32, {num_seqs, max_blocks}));
  b.query_start = to_device(TensorView(starts.data(), DType::kI32, {num_seqs + 1}));
  b.context_lens = to_device(TensorView(lens.data(), DType::kI32, {num_seqs}));
  b.positions = to_device(make_i32({num_tokens}, appends.positions));
  b.slot_mapping = to_device(make_i32({num_tokens}, appends.slots));
  const Shape cache_shape{num_blocks, num_kv_heads, block_size, head_dim};
  b.k_cache = Tensor(alloc, DType::kBF16, cache_shape);
  b.v_cache = Tensor(alloc, DType::kBF16, cache_shape);
  b.qkv = Tensor(alloc, DType::kBF16, {num_tokens, int64_t{num_heads + 2 * num_kv_heads} * head_dim});
  b.out = Tensor(alloc, DType::kBF16, {num_tokens, int64_t{num_heads} * head_dim});
  fill_random(b.k_cache, 1);
  fill_random(b.v_cache, 2);
  fill_random(b.qkv, 3);
  AttentionParams& p = b.params;
  p.q = b.qkv.view().slice(1, 0, int64_t{num_heads} * head_dim);
  p.k_cache = b.k_cache;
  p.v_cache = b.v_cache;
  p.block_tables = b.block_tables;
  p.query_start = b.query_start;
  p.context_lens = b.context_lens;
  p.out = b.out;
  p.num_heads = num_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_dim = head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  p.max_query_len = max_q;
  p.max_context_len = max_context;
  return b;
}

}  // namespace brisk::testing
