// The Hopper prefill kernel's consumers: per item (64 query rows per warpgroup) S = Q K^T with
// wgmma from shared memory (both K-major), the mask (its own code path, only on tiles that cross
// a row's causal / window bound), online softmax (running max of the raw scores, weights
// exp2(S scale log2e - max scale log2e): one FFMA and one ex2 each; the rows' sums of the fp32
// weights), P rounded to the KV dtype in registers, O rescaled only when some row of the warp saw
// a new max, O += P V with P as the register A operand and V read N-major, then the stage is
// released (one arrival per consumer warp).
//
// Ping-pong: tile t's S = Q K^T and softmax run while tile t - 1's P V is on the tensor cores,
// and the two consumer warpgroups take turns issuing their MMAs (named barriers 4 and 5), so
// one's softmax overlaps the other's MMAs. Both issue the same number of times (the same items
// and tiles). ptxas serialises every wgmma of the kernel (C7514 / C7515 in -Xptxas -v) when a
// wgmma's shape or issue depends on a branch, or accumulators are read before the wait that
// covers them on some path: check for those messages after changing the loop.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/prefill_attention/hopper_config.cuh"
#include "backend/cuda/kernels/prefill_attention/query_rows.cuh"

namespace brisk::cuda::prefill {

// The softmax's masks: none (every key of the tile visible to every row), the causal bound, the
// causal and the sliding-window bounds.
constexpr int kMaskNone = 0;
constexpr int kMaskCausal = 1;
constexpr int kMaskWindow = 2;

template <FloatType kKvType, typename C>
struct HopperMainloop {
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kTileKeys = C::kTileKeys;
  static constexpr int kStages = C::kStages;
  static constexpr int kSChunks = kTileKeys / 8;  // 8-column chunks of S (keys)
  static constexpr int kOChunks = kHeadDim / 8;   // of O (head dims)
  using Kv = KvTraits<kKvType>;
  using Scores = float[kTileKeys / 2];
  using Weights = uint32_t[kTileKeys / 16][4];

  const PrefillAttentionArgs& a;
  const HopperShared<C>& s;
  bool q_by_tma;
  int group;  // query heads per kv head
  int lane, wg, wg_tid, warp, wg_row0, g, t4, warp_row0;
  float scale_log2;
  uint64_t q_desc;
  uint32_t ring_address;
  int it = 0;  // tiles consumed so far

  // The item's rows and keys.
  HopperWork w;
  int row_hi[2], row_lo[2];  // visible keys [row_lo, row_hi]
  int warp_first, all_lo;    // every row of the warp sees [all_lo, warp_first]
  float m[2];                // running max of the raw scores
  float l[2];                // this thread's share of the running sums
  float o[kHeadDim / 2];

  __device__ __forceinline__ HopperMainloop(const PrefillAttentionArgs& args, const HopperShared<C>& shared,
                                            bool q_tma)
      : a(args), s(shared), q_by_tma(q_tma), group(args.num_heads / args.num_kv_heads) {
    const int ctid = threadIdx.x - 128;  // 0 .. 128 kConsumerWgs - 1
    lane = ctid % 32;
    // Through a shuffle from lane 0 the compiler knows these are warp-uniform: the wgmma
    // descriptors built from them then live in uniform registers instead of being moved there
    // before every wgmma.
    wg = __shfl_sync(0xFFFFFFFFu, ctid / 128, 0);
    wg_tid = ctid % 128;
    warp = __shfl_sync(0xFFFFFFFFu, ctid / 32, 0);
    wg_row0 = wg * 64;
    g = lane / 4;
    t4 = lane % 4;
    warp_row0 = warp * 16;  // this thread's rows: warp_row0 + g + 8 h
    scale_log2 = a.scale * kLog2e;
    q_desc = hopper::smem_descriptor(shared_address(s.q) + wg_row0 * hopper::kPanelRowBytes, 16, 1024);
    ring_address = shared_address(s.ring);
  }

  __device__ __forceinline__ void mma_turn_begin() const { hopper::named_barrier_sync(4 + wg, 256); }
  __device__ __forceinline__ void mma_turn_end() const { hopper::named_barrier_arrive(4 + (wg ^ 1), 256); }

  __device__ __forceinline__ void wait_tile(int t) const {
    hopper::mbarrier_wait(s.full_bar + 8 * ((it + t) % kStages), ((it + t) / kStages) & 1);
  }
  // After this warp's last MMA reading the tile completed.
  __device__ __forceinline__ void release_tile(int t) const {
    __syncwarp();
    if (lane == 0) hopper::mbarrier_arrive(s.empty_bar + 8 * ((it + t) % kStages));
  }
  // After this warp's last S of the item completed: the producer may load the next Q.
  __device__ __forceinline__ void release_q() const {
    if (!q_by_tma) return;
    __syncwarp();
    if (lane == 0) hopper::mbarrier_arrive(s.q_empty_bar);
  }

  // The item's Q: landed by TMA (rows past num_rows hold the next tokens' q or zeros past the
  // tensor: they only feed their own S rows, which are never written out), or the warpgroup's q
  // rows converted to the KV dtype here (rows past num_rows are zeros).
  __device__ __forceinline__ void stage_q(int items_done) const {
    if (q_by_tma) {
      hopper::mbarrier_wait(s.q_full_bar, items_done & 1);
      return;
    }
    constexpr int kChunks = kHeadDim / 8;
    for (int e = wg_tid; e < 64 * kChunks; e += 128) {
      const int r = wg_row0 + e / kChunks;
      const int c = e % kChunks;
      const uint4 words = r < w.num_rows ? load_q_chunk<kKvType, kHeadDim>(a, w.q_begin, w.row0 + r, group, w.kv_head, c)
                                         : make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(s.q + (c / 8) * C::kQPanelBytes + hopper::panel_offset(r, c % 8)) = words;
    }
    hopper::fence_proxy_async();  // the q stores, before wgmma reads them
    hopper::named_barrier_sync(2 + wg, 128);
  }

  __device__ __forceinline__ void begin_item() {
    const int window = a.sliding_window;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp_row0 + g + 8 * h;
      // Padding rows see what the last row sees: finite values, never written.
      row_hi[h] = w.past + (w.row0 + min(r, w.num_rows - 1)) / group;
      row_lo[h] = window > 0 ? row_hi[h] - window + 1 : 0;
    }
    // The warp's rows (clamped to real ones): keys every one of them sees.
    warp_first = w.past + (w.row0 + min(warp_row0, w.num_rows - 1)) / group;
    const int warp_last = w.past + (w.row0 + min(warp_row0 + 15, w.num_rows - 1)) / group;
    all_lo = window > 0 ? warp_last - window + 1 : 0;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
  }

  // S = Q K^T: head_dim / 16 k-steps, 4 per panel; one commit group.
  __device__ __forceinline__ void issue_s(Scores& sc, int t) {
    const uint64_t k_desc = hopper::smem_descriptor(ring_address + ((it + t) % kStages) * C::kStageBytes, 16, 1024);
    hopper::fence_registers(sc);
    hopper::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      const uint32_t step = (kk % 4) * 32;  // 16 columns into the panel
      const uint64_t qd = hopper::smem_descriptor_advance(q_desc, (kk / 4) * C::kQPanelBytes + step);
      const uint64_t kd = hopper::smem_descriptor_advance(k_desc, (kk / 4) * C::kKvPanelBytes + step);
      hopper::Wgmma<kTileKeys, kKvType>::ss(sc, qd, kd, kk > 0);
    }
    hopper::wgmma_commit();
  }

  // O += P V: V rows are keys (K), columns head dims (N), N-major panels; one commit group.
  __device__ __forceinline__ void issue_pv(const Weights& p, int t) {
    const uint64_t v_desc = hopper::smem_descriptor(
        ring_address + ((it + t) % kStages) * C::kStageBytes + C::kTileBytes, C::kKvPanelBytes, 1024);
    hopper::fence_registers(o);
    hopper::wgmma_fence();
#pragma unroll
    for (int j = 0; j < kTileKeys / 16; ++j) {
      const uint64_t vd = hopper::smem_descriptor_advance(v_desc, j * 16 * hopper::kPanelRowBytes);
      hopper::Wgmma<kHeadDim, kKvType>::template rs<1>(o, p[j], vd);
    }
    hopper::wgmma_commit();
  }

  // The item's last tile: V rows past the sequence's context (loaded from its last, partly filled
  // cache block; the cache may hold anything there, and P is 0 there but 0 * NaN is not) become
  // zeros before P V reads them. Each consumer warpgroup zeroes all of them itself and waits only
  // for its own threads (a barrier of both would stall the one ahead in the ping-pong); the two
  // write the same zeros to the same bytes.
  __device__ __forceinline__ void zero_tail(int t) const {
    const int valid = w.context_len - (w.key_base + t * kTileKeys);
    if (t != w.num_tiles - 1 || valid >= kTileKeys) return;
    constexpr int kChunksPerRow = C::kPanels * 8;
    uint8_t* v_s = s.ring + ((it + t) % kStages) * C::kStageBytes + C::kTileBytes;
    for (int e = wg_tid + valid * kChunksPerRow; e < kTileKeys * kChunksPerRow; e += 128) {
      const int r = e / kChunksPerRow;
      const int c = e % kChunksPerRow;
      *reinterpret_cast<uint4*>(v_s + (c / 8) * C::kKvPanelBytes + r * hopper::kPanelRowBytes + (c % 8) * 16) =
          make_uint4(0, 0, 0, 0);
    }
    hopper::fence_proxy_async();
    hopper::named_barrier_sync(2 + wg, 128);
  }

  // Mask and online softmax: S becomes exp2(S scale log2e - m scale log2e) in place, alpha the
  // factor that rescales the rows' earlier O and l. Without a window the mask compares each
  // element with the causal bound only.
  template <int kMask>
  __device__ __forceinline__ void softmax_rows(Scores& sc, int key0, float (&alpha)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Four independent partial maxima: short dependency chains.
      float part_max[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
      // The visible keys as offsets from this thread's first column: each element's offset is a
      // constant after unrolling (one compare pair and a select each).
      const int hi = row_hi[h] - key0 - 2 * t4;
      const int lo = row_lo[h] - key0 - 2 * t4;
#pragma unroll
      for (int n = 0; n < kSChunks; ++n) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float v = sc[4 * n + 2 * h + e];
          if constexpr (kMask != kMaskNone) {
            if (n * 8 + e > hi || (kMask == kMaskWindow && n * 8 + e < lo)) v = -INFINITY;
            sc[4 * n + 2 * h + e] = v;
          }
          part_max[n % 4] = fmaxf(part_max[n % 4], v);
        }
      }
      const float tile_max = quad_max(fmaxf(fmaxf(part_max[0], part_max[1]), fmaxf(part_max[2], part_max[3])));
      const float m_new = fmaxf(m[h], tile_max);
      const float base = m_new == -INFINITY ? 0.0f : m_new * scale_log2;
      alpha[h] = hopper::exp2_approx(m[h] * scale_log2 - base);  // 0 while nothing was visible
      m[h] = m_new;
#pragma unroll
      for (int n = 0; n < kSChunks; ++n) {
        sc[4 * n + 2 * h] = hopper::exp2_approx(fmaf(sc[4 * n + 2 * h], scale_log2, -base));
        sc[4 * n + 2 * h + 1] = hopper::exp2_approx(fmaf(sc[4 * n + 2 * h + 1], scale_log2, -base));
      }
    }
  }
  // The mask path is taken (warp-uniformly) only on tiles that cross a row's causal / window bound.
  __device__ __forceinline__ void softmax(Scores& sc, int t, float (&alpha)[2]) {
    const int key0 = w.key_base + t * kTileKeys;
    if (key0 + kTileKeys - 1 > warp_first || key0 < all_lo) {
      if (a.sliding_window > 0) {
        softmax_rows<kMaskWindow>(sc, key0, alpha);
      } else {
        softmax_rows<kMaskCausal>(sc, key0, alpha);
      }
    } else {
      softmax_rows<kMaskNone>(sc, key0, alpha);
    }
  }

  // P in the KV dtype as the A operand of P V (k-step j: keys 16 j ..: chunks 2 j (a0: row g,
  // a1: row g + 8) and 2 j + 1 (a2, a3)); l = l alpha + the fp32 weights (the output moves by at
  // most u max|v| against summing the rounded ones, which costs a conversion back per weight).
  __device__ __forceinline__ void pack(const Scores& sc, const float (&alpha)[2], Weights& p) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float part_sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // independent partial sums
#pragma unroll
      for (int n = 0; n < kSChunks; ++n) {
        p[n / 2][(n & 1) * 2 + h] = Kv::pack(sc[4 * n + 2 * h], sc[4 * n + 2 * h + 1]);
        part_sum[n % 4] += sc[4 * n + 2 * h] + sc[4 * n + 2 * h + 1];
      }
      l[h] = l[h] * alpha[h] + ((part_sum[0] + part_sum[1]) + (part_sum[2] + part_sum[3]));
    }
  }

  // O *= alpha; skipped when no row of the warp saw a new maximum (alpha is exactly 1 then),
  // which is most tiles past the first few of a long row.
  __device__ __forceinline__ void rescale(const float (&alpha)[2]) {
    if (!__any_sync(0xFFFFFFFFu, alpha[0] != 1.0f || alpha[1] != 1.0f)) return;
#pragma unroll
    for (int n = 0; n < kOChunks; ++n) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        o[4 * n + 2 * h] *= alpha[h];
        o[4 * n + 2 * h + 1] *= alpha[h];
      }
    }
  }

  // The item's tiles, ping-pong: tile t's S and softmax while tile t - 1's P V runs.
  __device__ __forceinline__ void tiles() {
    const int num_tiles = w.num_tiles;
    if (num_tiles == 0) return;
    Scores sc;
    Weights p;
    float alpha[2];
    wait_tile(0);
    mma_turn_begin();
    issue_s(sc, 0);
    mma_turn_end();
    hopper::wgmma_wait<0>();
    hopper::fence_registers(sc);
    if (num_tiles == 1) release_q();
    zero_tail(0);
    softmax(sc, 0, alpha);
    pack(sc, alpha, p);  // O is still zero: no rescale
    for (int t = 1; t < num_tiles; ++t) {
      wait_tile(t);
      mma_turn_begin();
      issue_s(sc, t);
      issue_pv(p, t - 1);
      mma_turn_end();
      hopper::wgmma_wait<1>();  // S of tile t
      hopper::fence_registers(sc);
      if (t == num_tiles - 1) release_q();
      zero_tail(t);
      softmax(sc, t, alpha);
      hopper::wgmma_wait<0>();  // P V of tile t - 1: p and O are free
      hopper::fence_registers(o);
      release_tile(t - 1);
      rescale(alpha);
      pack(sc, alpha, p);
    }
    mma_turn_begin();
    issue_pv(p, num_tiles - 1);
    mma_turn_end();
    hopper::wgmma_wait<0>();
    hopper::fence_registers(o);
    release_tile(num_tiles - 1);
  }

  // Every item the producer hands over, until it hands over -1; warpgroup 0 takes the first turn.
  __device__ __forceinline__ void run() {
    if (wg == 1) hopper::named_barrier_arrive(4, 256);
    for (int items_done = 0;; ++items_done) {
      const int item = s.items.take(items_done, lane);
      if (item < 0) break;
      w = hopper_work<C::kRows, kTileKeys>(a, item, group);
      stage_q(items_done);
      if (w.num_tiles == 0) release_q();
      begin_item();
      tiles();
      it += w.num_tiles;
      store_output_rows<kKvType, kHeadDim>(a, o, l, w.q_begin, w.row0, w.num_rows, group, w.kv_head, warp_row0, g,
                                           t4);
    }
  }
};

}  // namespace brisk::cuda::prefill
