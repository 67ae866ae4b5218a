// The sampler's shorter paths for sampled rows without penalties (sample.cu): the candidate path
// (top_k or top_p on at most kSampleCandidates gathered tokens) and the whole-row draw
// (temperature and min_p alone). Each leaves the row as the step-by-step path would and reports
// false where it cannot decide, for that path to run instead.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/sample/sample_block.cuh"
#include "backend/cuda/kernels/sample/sample_filters.cuh"

namespace brisk::cuda::sampling {

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
__device__ inline void for_each_tempered(const float* logits, int64_t vocab, float temperature, int bound,
                                         SampleShared& sh, Fn&& fn) {
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
__device__ inline bool sample_candidates(const SampleArgs& a, const SamplingRow& row, int64_t s, float* logits,
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
__device__ inline bool sample_whole_row(const SampleArgs& a, const SamplingRow& row, float* logits, SampleShared& sh,
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

}  // namespace brisk::cuda::sampling
