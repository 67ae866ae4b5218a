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
#include "backend/cuda/kernels/sample/sample_block.cuh"
#include "backend/cuda/kernels/sample/sample_fast_paths.cuh"
#include "backend/cuda/kernels/sample/sample_filters.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

using namespace sampling;

__global__ void __launch_bounds__(kThreads) sample_kernel(SampleArgs a) {
  __shared__ SampleShared sh;
  const int64_t s = blockIdx.x;
  float* logits = a.logits + s * a.logits_stride;
  const SamplingRow row = a.rows[s];
  const bool greedy = !(row.temperature >= kMinTemperature);
  int token;
  float logprob;
  if (!greedy && !penalized(a, row) &&
      (sample_candidates(a, row, s, logits, sh, token, logprob) ||
       sample_whole_row(a, row, logits, sh, token, logprob))) {
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
