// Hopper (sm_90a) building blocks for the warp-specialised kernels: mbarriers (arrive, expect_tx,
// parity waits), bulk tensor copies (TMA) that complete on an mbarrier, warpgroup MMA (wgmma)
// with its shared-memory matrix descriptors, fences, named barriers and register reallocation
// (setmaxnreg). Conventions: shared-memory operands are 128-byte-swizzled "panels" of 64 16-bit
// columns (128 bytes a row, 8-row / 1024-byte swizzle atoms, chunk c of row r at c ^ (r % 8)),
// the layout a TMA box with CU_TENSOR_MAP_SWIZZLE_128B writes and a wgmma descriptor with swizzle
// mode 1 reads; every panel starts 1024-byte aligned.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/hopper_wgmma_atoms.cuh"  // Wgmma<N, type>::ss / rs
#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda::hopper {

constexpr int kPanelCols = 64;     // 16-bit columns of one swizzled panel row (128 bytes)
constexpr int kPanelRowBytes = 128;

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` inside a panel.
__device__ __forceinline__ uint32_t panel_offset(int row, int chunk) {
  return static_cast<uint32_t>(row * kPanelRowBytes + ((chunk ^ (row & 7)) << 4));
}

// --- mbarriers -------------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Makes the initialised barriers visible to the async proxy (the copy engine).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival that also announces `bytes` of copies completing on the barrier in this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Waits until the phase of parity `parity` has completed (a fresh barrier counts the phase
// before its first as completed, so waiting for parity 1 returns at once).
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// --- bulk tensor copies ----------------------------------------------------------------------

// Copies the box at (x, y) of a 2-d tensor map into shared memory at dst; the bytes complete on
// `bar`. Boxes (partly) outside the tensor are filled with zeros and still count in full.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void* tensor_map, int x, int y, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tensor_map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
// The box at (x, y, z) of a 3-d tensor map (the query heads of one kv head over a run of tokens).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* tensor_map, int x, int y, int z, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tensor_map)), "r"(x), "r"(y), "r"(z), "r"(bar)
      : "memory");
}
// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global memory into
// shared memory at dst; the bytes complete on `bar`.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_descriptor(const void* tensor_map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(tensor_map)) : "memory");
}
// Orders this thread's ordinary shared-memory stores before later async-proxy reads (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// The same for global memory: accesses this thread ordered before (through its own accesses or
// acquired from other threads) are ordered before its later async-proxy (bulk copy) reads.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

// 2^x on the special function unit (flush to zero; 2^-inf = 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// --- barriers and registers ------------------------------------------------------------------

__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
template <int kRegisters>
__device__ __forceinline__ void registers_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void registers_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// --- wgmma -----------------------------------------------------------------------------------

// Descriptor of a shared-memory operand in 128-byte-swizzled panels. K-major (the reduction dim
// contiguous): sbo = 1024 (the next 8 rows), lbo unused. N-major: lbo = the byte stride between
// panels (the next 64 columns of N), sbo = 1024 (the next 8 rows of K). A k-step inside a panel
// moves the start address by 32 bytes (16 columns); the swizzle follows the address bits.
__device__ __forceinline__ uint64_t smem_descriptor(uint32_t address, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32) | (uint64_t{1} << 62);
}
// The descriptor of the operand `bytes` further on (a k-step, the next panel): one 32-bit add on
// the start-address field (shared addresses stay below 2^18, so it never carries out of the low
// word), the high word shared; cheaper than building each descriptor from its address.
__device__ __forceinline__ uint64_t smem_descriptor_advance(uint64_t descriptor, uint32_t bytes) {
  const uint32_t lo = static_cast<uint32_t>(descriptor) + (bytes >> 4);
  return (descriptor & 0xFFFFFFFF00000000ull) | lo;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of accumulator registers across the async MMAs.
template <int kN>
__device__ __forceinline__ void fence_registers(float (&r)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

}  // namespace brisk::cuda::hopper
