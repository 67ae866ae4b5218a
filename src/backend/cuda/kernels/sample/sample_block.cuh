// The sampling kernels' block-wide pieces over one logits row (sample.cu: one thread block per
// sequence): the shared scratch, the counter-based uniform, order-preserving keys, block
// reductions and scans, the max / argmax passes, the 16-ary key search behind top_k and top_p,
// and the log-sum-exp the log-probabilities come from.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda::sampling {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 16;
constexpr float kMinTemperature = 1e-5f;  // as the CPU reference (vLLM's epsilon)
constexpr int kHistBits = 12;  // the candidate path's bins: a key's sign, exponent and 3 mantissa bits
constexpr int kHistBins = 1 << kHistBits;
constexpr int kChunk = 4 * kThreads;  // tokens of a block-wide step of the chunked passes (four a thread)
constexpr int kMaxChunks = 128;       // the whole-row draw's vocabularies: up to 262144 tokens

struct SampleShared {
  union {
    float bins[kBins][kThreads];  // per-thread histograms: no atomics, no bank conflicts
    uint32_t hist[kHistBins];     // the candidate path's counts, before any filter runs
  };
  double warp_double[kWarps];
  float warp_float[kWarps];
  int warp_int[kWarps];
  double bin_total[kBins];
  uint32_t key;
  int token;
  int last_positive;
  int found;
  int bound;
  int count;
  double value;
  double target;
  double chunk_mass[kMaxChunks];  // the whole-row draw's weights per chunk
};

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Exactly cpu::sampling_uniform (see its definition for the recipe).
__device__ __forceinline__ double sampling_uniform(uint64_t seed, uint64_t step) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ step);
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

// Order-preserving map of floats to unsigned keys (larger float, larger key).
__device__ __forceinline__ uint32_t float_key(float value) {
  const uint32_t bits = __float_as_uint(value);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}
__device__ __forceinline__ float key_float(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

// op over every thread's value, the warps' results combined from `identity` in warp order, so
// every thread gets the same bits; warp_slots: kWarps values of SampleShared's scratch.
template <typename T, typename Op>
__device__ inline T block_reduce(T value, T identity, Op op, T* warp_slots) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) warp_slots[threadIdx.x / 32] = value;
  __syncthreads();
  T result = identity;
  for (int w = 0; w < kWarps; ++w) result = op(result, warp_slots[w]);
  return result;
}

__device__ inline double block_sum_double(double value, SampleShared& sh) {
  return block_reduce(value, 0.0, [](double a, double b) { return a + b; }, sh.warp_double);
}

// The sum of value over the threads before this one, and over all of them (total); warp_totals:
// kWarps values of shared scratch (SampleShared's warp_int or warp_double).
template <typename T>
__device__ inline T block_exclusive_scan(T value, T* warp_totals, T& total) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  T inclusive = value;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T other = __shfl_up_sync(0xFFFFFFFFu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  __syncthreads();  // the scratch's earlier use is over
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  T before = inclusive - value;
  total = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += warp_totals[w];
    total += warp_totals[w];
  }
  return before;
}

__device__ inline float block_max(float value, SampleShared& sh) {
  return block_reduce(value, -INFINITY, [](float a, float b) { return fmaxf(a, b); }, sh.warp_float);
}

// Calls fn(logit, index) for this thread's share of a row, its indices ascending. A 16-byte aligned
// row is read four logits a load: one block streams a whole row, so loads in flight bound it.
template <typename Fn>
__device__ __forceinline__ void for_each_logit(const float* row, int64_t vocab, Fn&& fn) {
  int64_t scalar_start = 0;
  if (reinterpret_cast<uintptr_t>(row) % 16 == 0) {
    const float4* quads = reinterpret_cast<const float4*>(row);
    const int64_t num_quads = vocab / 4;
#pragma unroll 4
    for (int64_t q = threadIdx.x; q < num_quads; q += blockDim.x) {
      const float4 x = quads[q];
      fn(x.x, 4 * q);
      fn(x.y, 4 * q + 1);
      fn(x.z, 4 * q + 2);
      fn(x.w, 4 * q + 3);
    }
    scalar_start = num_quads * 4;
  }
  for (int64_t v = scalar_start + threadIdx.x; v < vocab; v += blockDim.x) fn(row[v], v);
}

__device__ inline float row_max(const float* logits, int64_t vocab, SampleShared& sh) {
  float value = -INFINITY;
  for_each_logit(logits, vocab, [&](float logit, int64_t) { value = fmaxf(value, logit); });
  return block_max(value, sh);
}

// The lowest of the threads' candidate indices whose value is max_value (INT32_MAX: none).
__device__ inline int block_first_index_of(float value, int index, float max_value, SampleShared& sh) {
  const int candidate = (index != INT32_MAX && value == max_value) ? index : INT32_MAX;
  return block_reduce(candidate, INT32_MAX, [](int a, int b) { return min(a, b); }, sh.warp_int);
}

// The first index of the largest value; 0 when every logit is -inf or NaN (the CPU's argmax
// starts at index 0 and only moves on a strictly greater value). max_logit: row_max's value.
__device__ inline int block_argmax(const float* logits, int64_t vocab, SampleShared& sh, float* max_logit = nullptr) {
  float best = -INFINITY;
  int best_index = INT32_MAX;
  for_each_logit(logits, vocab, [&](float logit, int64_t v) {
    if (logit > best) {  // per thread, indices ascend: the first maximum stays
      best = logit;
      best_index = static_cast<int>(v);
    }
  });
  const float max_value = block_max(best, sh);
  if (max_logit != nullptr) *max_logit = max_value;
  const int result = block_first_index_of(best, best_index, max_value, sh);
  return result == INT32_MAX ? 0 : result;
}

// The largest key K such that f(K) >= target, where f(K) is the number (kMass false) or the
// probability mass exp(logit - max_logit) (kMass true) of the logits whose key is >= K. f does
// not increase with K, so K is found 4 bits at a time from the top: with the bits above `shift`
// fixed in prefix, candidate c_d = prefix | d << shift, and f(c_d) is the sum of the histogram
// bins >= d of the digits (key - prefix) >> shift (clamped to 15; keys below prefix add nothing).
template <bool kMass>
__device__ inline uint32_t select_key(const float* logits, int64_t vocab, double target, float max_logit,
                                      SampleShared& sh) {
  uint32_t prefix = 0;
  for (int shift = 28; shift >= 0; shift -= 4) {
#pragma unroll
    for (int d = 0; d < kBins; ++d) sh.bins[d][threadIdx.x] = 0.0f;
#pragma unroll 8
    for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
      const float logit = logits[v];
      const uint32_t key = float_key(logit);
      if (key < prefix) continue;
      const uint32_t digit = min((key - prefix) >> shift, 15u);
      const float weight = kMass ? (logit > -INFINITY ? expf(logit - max_logit) : 0.0f) : 1.0f;
      sh.bins[digit][threadIdx.x] += weight;
    }
    __syncthreads();
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (warp < kBins) {
      double sum = 0.0;
      for (int t = lane; t < kThreads; t += 32) sum += sh.bins[warp][t];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
      if (lane == 0) sh.bin_total[warp] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int chosen = 0;
      double at_least = 0.0;
      for (int d = kBins - 1; d >= 1; --d) {
        at_least += sh.bin_total[d];
        if (at_least >= target) { chosen = d; break; }
      }
      sh.key = prefix | (static_cast<uint32_t>(chosen) << shift);
    }
    __syncthreads();
    prefix = sh.key;
    __syncthreads();  // sh.key and the bins are rewritten next pass
  }
  return prefix;
}

// A row's log-sum-exp as the CPU takes it (max subtraction, sum in double); a row whose max is
// not finite keeps the max, as the CPU's does.
struct RowLse {
  double value;
  __device__ float logprob(float logit) const { return static_cast<float>(static_cast<double>(logit) - value); }
};

// Given the row's max (row_max); where copy is given, the row is also copied there.
__device__ inline RowLse row_lse(const float* row, int64_t vocab, float max_logit, SampleShared& sh,
                                 float* copy = nullptr) {
  if (!isfinite(max_logit) && copy == nullptr) return {static_cast<double>(max_logit)};
  double local = 0.0;
  for_each_logit(row, vocab, [&](float logit, int64_t v) {
    local += expf(logit - max_logit);
    if (copy != nullptr) copy[v] = logit;
  });
  const double sum = block_sum_double(local, sh);
  if (!isfinite(max_logit)) return {static_cast<double>(max_logit)};
  return {static_cast<double>(max_logit) + log(sum)};
}

// log_softmax(logits)[token].
__device__ inline float token_logprob(const float* logits, int64_t vocab, int token, SampleShared& sh) {
  return row_lse(logits, vocab, row_max(logits, vocab, sh), sh).logprob(logits[token]);
}

}  // namespace brisk::cuda::sampling
