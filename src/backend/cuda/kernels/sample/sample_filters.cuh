// The step-by-step path of the sampler (sample.cu), as the CPU reference runs it over a whole
// row: penalties, top_k, top_p, min_p (dropped logits become -inf) and the inverse-CDF draw.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/sample/sample_block.cuh"

namespace brisk::cuda::sampling {

// Whether apply_penalties changes the row.
__device__ inline bool penalized(const SampleArgs& a, const SamplingRow& row) {
  return a.counts != nullptr && row.has_penalties();
}

__device__ inline void apply_penalties(float* logits, const SampleArgs& a, const SamplingRow& row, int64_t s) {
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
__device__ inline void apply_top_k(float* logits, int64_t vocab, int32_t top_k, SampleShared& sh) {
  if (top_k <= 0 || top_k >= vocab) return;
  const uint32_t threshold = select_key<false>(logits, vocab, static_cast<double>(top_k), 0.0f, sh);
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    if (float_key(logits[v]) < threshold) logits[v] = -INFINITY;
  }
  __syncthreads();
}

// The index of the n-th (1-based) logit in vocabulary order whose key is `key`, or -1.
__device__ inline int nth_with_key(const float* logits, int64_t vocab, uint32_t key, int64_t n, SampleShared& sh) {
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
__device__ inline void apply_top_p(float* logits, int64_t vocab, float top_p, SampleShared& sh, double total = -1.0) {
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
__device__ inline void apply_min_p(float* logits, int64_t vocab, float min_p, SampleShared& sh) {
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
__device__ inline int draw(const float* logits, int64_t vocab, double uniform, SampleShared& sh) {
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

}  // namespace brisk::cuda::sampling
