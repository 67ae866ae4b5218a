// Token sampling on the device, one thread block per sequence, reproducing the CPU reference
// (src/backend/cpu/sample.cc) step by step:
//   penalties (repetition over prompt + output, frequency/presence over output) -> greedy argmax
//   (lowest index on ties) or temperature -> top_k -> top_p -> min_p -> inverse-CDF draw with the
//   same counter-based uniform(seed, step); the log-probability comes from the raw logits.
// The log-probability is of the logits as given: a row the call leaves unchanged (greedy, no
// penalty) is read twice (argmax with its max, then the log-sum-exp), a row it modifies is copied
// to scratch as its log-sum-exp is taken, before any change.
// Performance: one block reads a row several times, bound by the loads one SM keeps in flight
// (the max, argmax and log-sum-exp passes load four logits at a time). A sampled row without
// penalties takes a shorter path first: with top_k or top_p the candidate path (sample_candidates:
// four passes over the row, the filters and the draw on the few thousand tokens that can survive
// them), else the whole-row draw (sample_whole_row: four passes). The step-by-step path below is
// their fallback and the one of penalized rows.
// Sort-free: the top-k / top-p thresholds are found by a 16-ary search over the logits' 32-bit
// order-preserving keys (8 passes of 4 bits), each pass a block-wide histogram of counts or
// probability mass. Weights are exp(logit - max) in fp32 summed in double (the CPU uses double
// exp): the chosen token can differ from the CPU's only when a cumulative probability lies within
// ~1e-7 of a boundary.
#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

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

__device__ double block_sum_double(double value, SampleShared& sh) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  __syncthreads();
  if (threadIdx.x % 32 == 0) sh.warp_double[threadIdx.x / 32] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; ++w) total += sh.warp_double[w];  // same order in every thread
  return total;
}

// The sum of value over the threads before this one, and over all of them (total); warp_totals:
// kWarps values of shared scratch (SampleShared's warp_int or warp_double).
template <typename T>
__device__ T block_exclusive_scan(T value, T* warp_totals, T& total) {
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

__device__ float block_max(float value, SampleShared& sh) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value = fmaxf(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) sh.warp_float[threadIdx.x / 32] = value;
  __syncthreads();
  float result = -INFINITY;
  for (int w = 0; w < kWarps; ++w) result = fmaxf(result, sh.warp_float[w]);
  return result;
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

__device__ float row_max(const float* logits, int64_t vocab, SampleShared& sh) {
  float value = -INFINITY;
  for_each_logit(logits, vocab, [&](float logit, int64_t) { value = fmaxf(value, logit); });
  return block_max(value, sh);
}

// The lowest of the threads' candidate indices whose value is max_value (INT32_MAX: none).
__device__ int block_first_index_of(float value, int index, float max_value, SampleShared& sh) {
  int candidate = (index != INT32_MAX && value == max_value) ? index : INT32_MAX;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    candidate = min(candidate, __shfl_xor_sync(0xFFFFFFFFu, candidate, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) sh.warp_int[threadIdx.x / 32] = candidate;
  __syncthreads();
  int result = INT32_MAX;
  for (int w = 0; w < kWarps; ++w) result = min(result, sh.warp_int[w]);
  return result;
}

// The first index of the largest value; 0 when every logit is -inf or NaN (the CPU's argmax
// starts at index 0 and only moves on a strictly greater value). max_logit: row_max's value.
__device__ int block_argmax(const float* logits, int64_t vocab, SampleShared& sh, float* max_logit = nullptr) {
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
__device__ uint32_t select_key(const float* logits, int64_t vocab, double target, float max_logit,
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


// Whether apply_penalties changes the row.
__device__ bool penalized(const SampleArgs& a, const SamplingRow& row) {
  return a.counts != nullptr && row.has_penalties();
}

__device__ void apply_penalties(float* logits, const SampleArgs& a, const SamplingRow& row,
                                int64_t s) {
  if (!penalized(a, row)) return;
  const bool repetition = row.repetition_penalty != 1.0f;
  const bool additive = row.frequency_penalty != 0.0f || row.presence_penalty != 0.0f;
  // counts[v] = 2 * (occurrences of v in the output) + (1 if v occurs in prompt or output).
  uint32_t* counts = a.counts + s * a.vocab;
  if (a.prompt_start != nullptr) {
    for (int64_t i = a.prompt_start[s] + threadIdx.x; i < a.prompt_start[s + 1]; i += blockDim.x) {
      const int32_t token = a.prompt_tokens[i];
      if (token >= 0 && token < a.vocab) atomicOr(&counts[token], 1u);
    }
  }
  if (a.output_start != nullptr) {
    for (int64_t i = a.output_start[s] + threadIdx.x; i < a.output_start[s + 1]; i += blockDim.x) {
      const int32_t token = a.output_tokens[i];
      if (token >= 0 && token < a.vocab) {
        atomicAdd(&counts[token], 2u);
        atomicOr(&counts[token], 1u);
      }
    }
  }
  __syncthreads();  // the atomics above are visible to the whole block after the barrier
  for (int64_t v = threadIdx.x; v < a.vocab; v += blockDim.x) {
    const uint32_t c = counts[v];
    if (c == 0) continue;
    float logit = logits[v];
    if (repetition) {  // each distinct token once, however often it occurs
      logit = logit > 0.0f ? __fdiv_rn(logit, row.repetition_penalty)
                           : __fmul_rn(logit, row.repetition_penalty);
    }
    const uint32_t output_count = c >> 1;
    if (additive && output_count > 0) {
      // Separately rounded, as the CPU computes logit -= freq * count + presence.
      const float penalty = __fadd_rn(__fmul_rn(row.frequency_penalty, static_cast<float>(output_count)),
                                      row.presence_penalty);
      logit = __fsub_rn(logit, penalty);
    }
    logits[v] = logit;
  }
  __syncthreads();
}

// Keeps the logits >= the k-th largest (ties with it survive, as in the CPU reference).
__device__ void apply_top_k(float* logits, int64_t vocab, int32_t top_k, SampleShared& sh) {
  if (top_k <= 0 || top_k >= vocab) return;
  const uint32_t threshold = select_key<false>(logits, vocab, static_cast<double>(top_k), 0.0f, sh);
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    if (float_key(logits[v]) < threshold) logits[v] = -INFINITY;
  }
  __syncthreads();
}

// The index of the n-th (1-based) logit in vocabulary order whose key is `key`, or -1.
__device__ int nth_with_key(const float* logits, int64_t vocab, uint32_t key, int64_t n,
                            SampleShared& sh) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  int64_t seen = 0;
  if (threadIdx.x == 0) sh.found = -1;
  for (int64_t base = 0; base < vocab; base += blockDim.x) {
    const int64_t v = base + threadIdx.x;
    const bool match = v < vocab && float_key(logits[v]) == key;
    const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, match);
    __syncthreads();  // warp_int and found from the previous chunk are consumed
    if (lane == 0) sh.warp_int[warp] = __popc(ballot);
    __syncthreads();
    int64_t before = seen + __popc(ballot & ((1u << lane) - 1u));
    int64_t chunk_total = 0;
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp) before += sh.warp_int[w];
      chunk_total += sh.warp_int[w];
    }
    if (match && before + 1 == n) sh.found = static_cast<int>(v);
    __syncthreads();
    if (sh.found >= 0) break;  // uniform: every thread reads found after the barrier
    seen += chunk_total;
  }
  const int found = sh.found;
  __syncthreads();
  return found;
}

// Keeps the smallest set of most probable tokens whose probability reaches top_p (at least one);
// among equal logits the lower token id comes first. total: the mass exp(logit - max) of the whole
// row when these logits are only its most probable part (negative: theirs).
__device__ void apply_top_p(float* logits, int64_t vocab, float top_p, SampleShared& sh, double total = -1.0) {
  if (!(top_p < 1.0f)) return;
  const float max_logit = row_max(logits, vocab, sh);
  if (!(max_logit > -INFINITY)) return;  // nothing left to choose from
  if (total < 0.0) {
    double local = 0.0;
    for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
      if (logits[v] > -INFINITY) local += expf(logits[v] - max_logit);
    }
    total = block_sum_double(local, sh);
  }
  const double target = static_cast<double>(top_p) * total;
  const uint32_t threshold = select_key<true>(logits, vocab, target, max_logit, sh);
  // Mass strictly above the threshold, and how many logits sit exactly on it.
  double above = 0.0, ties = 0.0;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    const float logit = logits[v];
    if (!(logit > -INFINITY)) continue;
    const uint32_t key = float_key(logit);
    if (key > threshold) above += expf(logit - max_logit);
    if (key == threshold) ties += 1.0;
  }
  above = block_sum_double(above, sh);
  ties = block_sum_double(ties, sh);
  int boundary = -1;  // ties after this index are dropped
  if (ties > 0.0) {
    const double weight = expf(key_float(threshold) - max_logit);
    double needed = ceil((target - above) / weight);
    needed = fmin(fmax(needed, 1.0), ties);
    if (needed < ties) boundary = nth_with_key(logits, vocab, threshold, static_cast<int64_t>(needed), sh);
  }
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    const uint32_t key = float_key(logits[v]);
    if (key < threshold || (key == threshold && boundary >= 0 && v > boundary)) logits[v] = -INFINITY;
  }
  __syncthreads();
}

// Drops tokens whose probability is below min_p times the largest probability.
__device__ void apply_min_p(float* logits, int64_t vocab, float min_p, SampleShared& sh) {
  if (!(min_p > 0.0f)) return;
  const float max_logit = row_max(logits, vocab, sh);
  if (!isfinite(max_logit)) return;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    if (expf(logits[v] - max_logit) < min_p) logits[v] = -INFINITY;
  }
  __syncthreads();
}

// Inverse CDF in vocabulary order. Each thread owns a contiguous segment; an exclusive scan of
// the segment sums gives each thread its starting cumulative weight, then every thread walks its
// segment and the lowest index where the cumulative weight passes uniform * total wins.
__device__ int draw(const float* logits, int64_t vocab, double uniform, SampleShared& sh) {
  const float max_logit = row_max(logits, vocab, sh);
  if (!isfinite(max_logit)) return block_argmax(logits, vocab, sh);
  const int64_t per_thread = (vocab + blockDim.x - 1) / blockDim.x;
  const int64_t first = static_cast<int64_t>(threadIdx.x) * per_thread;
  const int64_t begin = first < vocab ? first : vocab;
  const int64_t end = begin + per_thread < vocab ? begin + per_thread : vocab;
  double local = 0.0;
#pragma unroll 8
  for (int64_t v = begin; v < end; ++v) local += expf(logits[v] - max_logit);
  // Exclusive scan over threads: within the warp by shuffles, then over warp totals.
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  double inclusive = local;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const double other = __shfl_up_sync(0xFFFFFFFFu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  __syncthreads();
  if (lane == 31) sh.warp_double[warp] = inclusive;
  if (threadIdx.x == 0) {
    sh.token = INT32_MAX;
    sh.last_positive = -1;
  }
  __syncthreads();
  double start = inclusive - local;
  double total = 0.0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) start += sh.warp_double[w];
    total += sh.warp_double[w];
  }
  const double target = uniform * total;
  double cumulative = start;
  int last = -1;
  for (int64_t v = begin; v < end; ++v) {
    const double weight = expf(logits[v] - max_logit);
    if (weight <= 0.0) continue;
    cumulative += weight;
    last = static_cast<int>(v);
    if (cumulative > target) {
      atomicMin(&sh.token, last);
      break;
    }
  }
  if (last >= 0) atomicMax(&sh.last_positive, last);
  __syncthreads();
  int token = sh.token;
  if (token == INT32_MAX) token = sh.last_positive >= 0 ? sh.last_positive : 0;
  __syncthreads();
  return token;
}

// A row's log-sum-exp as the CPU takes it (max subtraction, sum in double); a row whose max is
// not finite keeps the max, as the CPU's does.
struct RowLse {
  double value;
  __device__ float logprob(float logit) const { return static_cast<float>(static_cast<double>(logit) - value); }
};

// Given the row's max (row_max); where copy is given, the row is also copied there.
__device__ RowLse row_lse(const float* row, int64_t vocab, float max_logit, SampleShared& sh, float* copy = nullptr) {
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
__device__ float token_logprob(const float* logits, int64_t vocab, int token, SampleShared& sh) {
  return row_lse(logits, vocab, row_max(logits, vocab, sh), sh).logprob(logits[token]);
}

// A thread's four consecutive logits of a chunk from first (-inf past the row).
__device__ __forceinline__ void load_four(const float* logits, int64_t vocab, int64_t first, float (&x)[4]) {
  if (reinterpret_cast<uintptr_t>(logits) % 16 == 0 && first + 4 <= vocab) {
    const float4 q = *reinterpret_cast<const float4*>(logits + first);
    x[0] = q.x, x[1] = q.y, x[2] = q.z, x[3] = q.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = first + i < vocab ? logits[first + i] : -INFINITY;
  }
}

// fn(t, v, selected, position) for every token v of the row in order, chunk by chunk, with
// t = logit / temperature, selected = t's key in a histogram bin >= bound, and position = the
// number of selected tokens before v. Four consecutive tokens a thread; every thread runs every
// chunk (barriers inside).
template <typename Fn>
__device__ void for_each_tempered(const float* logits, int64_t vocab, float temperature, int bound, SampleShared& sh,
                                  Fn&& fn) {
  int base = 0;
  for (int64_t chunk = 0; chunk < vocab; chunk += kChunk) {
    const int64_t first = chunk + 4 * threadIdx.x;
    float t[4];
    load_four(logits, vocab, first, t);
    int count = 0;
    bool selected[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      t[i] = __fdiv_rn(t[i], temperature);
      selected[i] = first + i < vocab && static_cast<int>(float_key(t[i]) >> (32 - kHistBits)) >= bound;
      count += selected[i];
    }
    int total;
    int position = base + block_exclusive_scan(count, sh.warp_int, total);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (first + i < vocab) fn(t[i], first + i, selected[i], position);
      position += selected[i];
    }
    base += total;
  }
}

// The candidate path of a sampled row without penalties, with top_k or top_p: the tempered
// logits t = logit / temperature are counted by the top 12 bits of their keys (one pass, with the
// raw row's log-sum-exp and, for top_p alone, t's whole mass); the highest bins holding at most
// kSampleCandidates tokens are gathered in vocabulary order, and top_k, top_p, min_p and the draw
// run on them as on a row; the row is then written as the whole-row path leaves it. Returns false,
// having written nothing but scratch, where the survivors may lie outside the gathered tokens.
__device__ bool sample_candidates(const SampleArgs& a, const SamplingRow& row, int64_t s, float* logits,
                                  SampleShared& sh, int& token, float& logprob) {
  const int64_t vocab = a.vocab;
  const bool top_k = row.top_k > 0 && row.top_k < vocab, top_p_alone = !top_k && row.top_p < 1.0f;
  if (!top_k && !top_p_alone) return false;
  const float max_logit = row_max(logits, vocab, sh);
  const float max_t = __fdiv_rn(max_logit, row.temperature);  // the division keeps the order
  if (!isfinite(max_logit) || !isfinite(max_t)) return false;
  for (int b = threadIdx.x; b < kHistBins; b += kThreads) sh.hist[b] = 0;
  __syncthreads();
  double lse_local = 0.0, mass_local = 0.0;
  for_each_logit(logits, vocab, [&](float logit, int64_t) {
    if (a.out_logprobs != nullptr) lse_local += expf(logit - max_logit);  // row_lse's terms and order
    const float t = __fdiv_rn(logit, row.temperature);
    if (top_p_alone) mass_local += expf(t - max_t);
    const uint32_t bin = float_key(t) >> (32 - kHistBits);
    const unsigned peers = __match_any_sync(__activemask(), bin);
    if (static_cast<int>(threadIdx.x % 32) == __ffs(peers) - 1) atomicAdd(&sh.hist[bin], __popc(peers));
  });
  const double lse = static_cast<double>(max_logit) + log(block_sum_double(lse_local, sh));
  const double total = top_p_alone ? block_sum_double(mass_local, sh) : 0.0;  // (barriers: hist is complete)

  // bound: the lowest bin b whose tokens with bins >= b number at most kSampleCandidates. A thread
  // owns kHistBins / kThreads consecutive bins; the counts above them come from a block scan.
  constexpr int kOwn = kHistBins / kThreads;
  int own = 0;
#pragma unroll
  for (int i = 0; i < kOwn; ++i) own += sh.hist[kOwn * threadIdx.x + i];
  int all;
  const int before = block_exclusive_scan(own, sh.warp_int, all);
  const int above = all - before - own;
  if (threadIdx.x == 0) sh.bound = kHistBins;
  __syncthreads();
  int count = above, mine = kHistBins, mine_count = 0;
#pragma unroll
  for (int i = kOwn - 1; i >= 0; --i) {
    count += sh.hist[kOwn * threadIdx.x + i];
    if (count <= kSampleCandidates) mine = kOwn * threadIdx.x + i, mine_count = count;
  }
  atomicMin(&sh.bound, mine);
  __syncthreads();
  const int bound = sh.bound;
  if (mine == bound && bound < kHistBins) sh.count = mine_count;
  __syncthreads();
  if (bound == kHistBins) return false;  // the top bin alone holds too many
  const int n = sh.count;
  if (n == 0 || (top_k && n < row.top_k)) return false;

  float* candidates = a.candidate_logits + s * kSampleCandidates;
  int32_t* candidate_tokens = a.candidate_tokens + s * kSampleCandidates;
  double gathered = 0.0;
  for_each_tempered(logits, vocab, row.temperature, bound, sh, [&](float t, int64_t v, bool selected, int position) {
    if (!selected) return;
    candidates[position] = t;
    candidate_tokens[position] = static_cast<int32_t>(v);
    if (top_p_alone) gathered += expf(t - max_t);
  });
  // top_p alone keeps the most probable tokens up to top_p of the whole mass: all gathered ones
  // are more probable than any other, so it keeps only gathered ones if they hold that much.
  if (top_p_alone && block_sum_double(gathered, sh) < static_cast<double>(row.top_p) * total) return false;
  __syncthreads();  // the candidates are visible to the whole block

  if (top_k) apply_top_k(candidates, n, row.top_k, sh);
  apply_top_p(candidates, n, row.top_p, sh, top_p_alone ? total : -1.0);
  apply_min_p(candidates, n, row.min_p, sh);
  token = candidate_tokens[draw(candidates, n, sampling_uniform(row.seed, row.step), sh)];
  logprob = static_cast<float>(static_cast<double>(logits[token]) - lse);
  __syncthreads();  // logits[token] is read before the row is rewritten
  // The row as the whole-row path leaves it: survivors tempered, the rest -inf.
  for_each_tempered(logits, vocab, row.temperature, bound, sh, [&](float, int64_t v, bool selected, int position) {
    logits[v] = selected ? candidates[position] : -INFINITY;
  });
  return true;
}

// A sampled row without top_k, top_p or penalties (temperature, min_p): the inverse-CDF draw over
// the whole row from two passes (the max; then each chunk's weights summed, the raw row's
// log-sum-exp beside them), the crossing found within one chunk, and the row written as the
// whole-row path leaves it (tempered, min_p's drops -inf). Returns false, having changed nothing,
// with a non-finite max or past kMaxChunks chunks.
__device__ bool sample_whole_row(const SampleArgs& a, const SamplingRow& row, float* logits, SampleShared& sh,
                                 int& token, float& logprob) {
  const int64_t vocab = a.vocab, num_chunks = (vocab + kChunk - 1) / kChunk;
  if (row.top_p < 1.0f || (row.top_k > 0 && row.top_k < vocab) || num_chunks > kMaxChunks) return false;
  const float max_logit = row_max(logits, vocab, sh);
  const float max_t = __fdiv_rn(max_logit, row.temperature);  // the division keeps the order
  if (!isfinite(max_logit) || !isfinite(max_t)) return false;
  // What the draw weighs t by: exp(t - max), 0 where min_p drops it (apply_min_p, then draw).
  const auto dropped = [&](float t) { return row.min_p > 0.0f && expf(t - max_t) < row.min_p; };
  const auto weight = [&](float t) { return dropped(t) ? 0.0f : expf(t - max_t); };
  if (threadIdx.x == 0) sh.last_positive = -1;
  double lse_local = 0.0;
  int last = -1;
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t first = c * kChunk + 4 * threadIdx.x;
    float x[4];
    load_four(logits, vocab, first, x);
    double mass = 0.0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (first + i >= vocab) continue;
      if (a.out_logprobs != nullptr) lse_local += expf(x[i] - max_logit);  // for_each_logit's order
      const float w = weight(__fdiv_rn(x[i], row.temperature));
      mass += w;
      if (w > 0.0f) last = static_cast<int>(first + i);
    }
    mass = block_sum_double(mass, sh);
    if (threadIdx.x == 0) sh.chunk_mass[c] = mass;
  }
  atomicMax(&sh.last_positive, last);
  const double lse = static_cast<double>(max_logit) + log(block_sum_double(lse_local, sh));
  if (threadIdx.x == 0) {  // the chunk where the cumulative weight passes uniform * total
    double total = 0.0;
    for (int64_t c = 0; c < num_chunks; ++c) total += sh.chunk_mass[c];
    const double target = sampling_uniform(row.seed, row.step) * total;
    double before = 0.0;
    int chosen = -1;
    for (int64_t c = 0; c < num_chunks && chosen < 0; ++c) {
      if (before + sh.chunk_mass[c] > target) chosen = static_cast<int>(c);
      else before += sh.chunk_mass[c];
    }
    sh.found = chosen;
    sh.value = before;
    sh.target = target;
    sh.token = INT32_MAX;
  }
  __syncthreads();
  const int chosen = sh.found;
  if (chosen >= 0) {  // uniform: every thread reads found after the barrier
    const int64_t first = chosen * int64_t{kChunk} + 4 * threadIdx.x;
    float x[4], w[4];
    load_four(logits, vocab, first, x);
    double mine = 0.0;
#pragma unroll
    for (int i = 0; i < 4; ++i) mine += w[i] = first + i < vocab ? weight(__fdiv_rn(x[i], row.temperature)) : 0.0f;
    double chunk_total;
    double cumulative = sh.value + block_exclusive_scan(mine, sh.warp_double, chunk_total);
    const double target = sh.target;
    for (int i = 0; i < 4; ++i) {
      if (!(w[i] > 0.0f)) continue;
      cumulative += w[i];
      if (cumulative > target) {
        atomicMin(&sh.token, static_cast<int>(first + i));
        break;
      }
    }
  }
  __syncthreads();
  // Rounding can leave the crossing past every weight: the last positive one, as draw() takes it.
  token = sh.token != INT32_MAX ? sh.token : (sh.last_positive >= 0 ? sh.last_positive : 0);
  logprob = static_cast<float>(static_cast<double>(logits[token]) - lse);
  __syncthreads();  // logits[token] is read before the row is rewritten
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t first = c * kChunk + 4 * threadIdx.x;
    float x[4];
    load_four(logits, vocab, first, x);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float t = __fdiv_rn(x[i], row.temperature);
      if (first + i < vocab) logits[first + i] = dropped(t) ? -INFINITY : t;
    }
  }
  return true;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(SampleArgs a) {
  __shared__ SampleShared sh;
  const int64_t s = blockIdx.x;
  float* logits = a.logits + s * a.logits_stride;
  const SamplingRow row = a.rows[s];
  const bool greedy = !(row.temperature >= kMinTemperature);
  int token;
  float logprob;
  if (!greedy && !penalized(a, row) &&
      (sample_candidates(a, row, s, logits, sh, token, logprob) || sample_whole_row(a, row, logits, sh, token, logprob))) {
    if (threadIdx.x != 0) return;
    a.out_tokens[s] = token;
    if (a.out_logprobs != nullptr) a.out_logprobs[s] = logprob;
    return;
  }
  // The logprob's log-sum-exp: of a row this call modifies taken now, with the row copied.
  float* raw = nullptr;
  RowLse lse{0.0};
  if (a.out_logprobs != nullptr && (!greedy || penalized(a, row))) {
    raw = a.raw_scratch + s * a.vocab;
    lse = row_lse(logits, a.vocab, row_max(logits, a.vocab, sh), sh, raw);
  }
  apply_penalties(logits, a, row, s);
  if (greedy) {
    float max_logit;
    token = block_argmax(logits, a.vocab, sh, &max_logit);
    if (a.out_logprobs != nullptr && raw == nullptr) lse = row_lse(logits, a.vocab, max_logit, sh);
  } else {
    for (int64_t v = threadIdx.x; v < a.vocab; v += blockDim.x)
      logits[v] = __fdiv_rn(logits[v], row.temperature);
    __syncthreads();
    apply_top_k(logits, a.vocab, row.top_k, sh);
    apply_top_p(logits, a.vocab, row.top_p, sh);
    apply_min_p(logits, a.vocab, row.min_p, sh);
    token = draw(logits, a.vocab, sampling_uniform(row.seed, row.step), sh);
  }
  if (threadIdx.x != 0) return;
  a.out_tokens[s] = token;
  // raw[token] was written by some thread of this block before the barriers since.
  if (a.out_logprobs != nullptr) a.out_logprobs[s] = lse.logprob(raw != nullptr ? raw[token] : logits[token]);
}

// k rounds of a block-wide argmax, each over the logits ranked after the previous pick in the
// order (larger logit first, lower index among equals): the CPU's partial sort, without a sort.
// The row is read k + 2 times; at k <= 20 it stays in L2.
__global__ void __launch_bounds__(kThreads) top_logprobs_kernel(TopLogprobsArgs a) {
  __shared__ SampleShared sh;
  const int64_t s = blockIdx.x;
  const float* logits = a.logits + s * a.logits_stride;
  const float max_logit = row_max(logits, a.vocab, sh);
  double log_sum_exp = max_logit;
  if (isfinite(max_logit)) {
    double local = 0.0;
#pragma unroll 8
    for (int64_t v = threadIdx.x; v < a.vocab; v += blockDim.x) local += expf(logits[v] - max_logit);
    log_sum_exp += log(block_sum_double(local, sh));
  }
  float prev_value = INFINITY;
  int prev_index = -1;
  for (int j = 0; j < a.k; ++j) {
    float best = -INFINITY;
    int best_index = INT32_MAX;
    for (int64_t v = threadIdx.x; v < a.vocab; v += blockDim.x) {
      const float x = logits[v];
      const bool after = x < prev_value || (x == prev_value && v > prev_index);
      if (after && (best_index == INT32_MAX || x > best)) {
        best = x;
        best_index = static_cast<int>(v);
      }
    }
    const float max_value = block_max(best_index == INT32_MAX ? -INFINITY : best, sh);
    const int index = block_first_index_of(best, best_index, max_value, sh);
    prev_value = max_value;
    prev_index = index;
    if (threadIdx.x == 0) {
      a.out_tokens[s * a.k + j] = index;
      a.out_logprobs[s * a.k + j] = static_cast<float>(static_cast<double>(max_value) - log_sum_exp);
    }
  }
}

// The CPU's token_logprobs: log_softmax at the given token, and 1 + the count of larger logits.
__global__ void __launch_bounds__(kThreads) token_logprobs_kernel(TokenLogprobsArgs a) {
  __shared__ SampleShared sh;
  const int64_t s = blockIdx.x;
  const float* logits = a.logits + s * a.logits_stride;
  const int token = a.tokens[s];
  const float logprob = token_logprob(logits, a.vocab, token, sh);
  const float target = logits[token];
  double num_larger = 0.0;  // exact: counts stay far below 2^53
  for_each_logit(logits, a.vocab, [&](float logit, int64_t) { num_larger += logit > target ? 1.0 : 0.0; });
  num_larger = block_sum_double(num_larger, sh);
  if (threadIdx.x == 0) {
    a.out_logprobs[s] = logprob;
    a.out_ranks[s] = static_cast<int32_t>(num_larger) + 1;
  }
}

}  // namespace

void launch_token_logprobs(const TokenLogprobsArgs& a, cudaStream_t stream) {
  if (a.num_seqs == 0) return;
  token_logprobs_kernel<<<static_cast<unsigned>(a.num_seqs), kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

void launch_top_logprobs(const TopLogprobsArgs& a, cudaStream_t stream) {
  if (a.num_seqs == 0 || a.k == 0) return;
  top_logprobs_kernel<<<static_cast<unsigned>(a.num_seqs), kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

void launch_sample(const SampleArgs& a, cudaStream_t stream) {
  if (a.num_seqs == 0) return;
  sample_kernel<<<static_cast<unsigned>(a.num_seqs), kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda
