// Shared helpers of the CUDA-vs-CPU op parity tests: both backends, host<->device tensors,
// random inputs, and the --perf mode (env BRISK_OPS_PERF=1; gtest eats unknown flags) that
// times the CUDA op at a Llama-3-8B shape and prints / appends a JSON line
// (env BRISK_OPS_PERF_JSON names the file).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/make_backend.h"
#include "brisk/engine.h"
#include "unit/backend_cpu/op_test_util.h"

namespace brisk::testing {

// The FLOP limits the perf lines are compared with: cuBLAS's 16384^3 bf16 GEMM on the H200
// (/work/shared/GPU.md), Hopper's dense rate for both of its cards. The bandwidth limit is this
// card's own copy rate, measured (device_copy_bytes_per_second).
constexpr double kPeakBf16FlopsPerSecond = 692e12;
constexpr double kPeakFp8FlopsPerSecond = 2 * kPeakBf16FlopsPerSecond;  // Hopper's e4m3 MMA rate

inline Backend& cpu_backend() {
  static std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

inline Backend& cuda_backend() {
  static std::unique_ptr<Backend> backend = make_backend("cuda");
  return *backend;
}

// A device copy of a host tensor.
inline Tensor to_device(const TensorView& host) {
  Tensor device(cuda_backend().allocator(), host.dtype(), host.shape());
  cuda_backend().copy(device, host);
  return device;
}

// A host copy of a contiguous device view.
inline Tensor to_host(const TensorView& device) {
  Tensor host(cpu_allocator(), device.dtype(), device.shape());
  cuda_backend().copy(host, device);
  return host;
}

// A host copy of a host tensor (so the CPU op and the CUDA op each get their own).
inline Tensor clone(const TensorView& host) {
  Tensor copy(cpu_allocator(), host.dtype(), host.shape());
  cpu_backend().copy(copy, host);
  return copy;
}

inline Tensor zeros(DType dtype, Shape shape) {
  return make_tensor(dtype, shape, std::vector<double>(shape.num_elements(), 0.0));
}

// Relative tolerance of one rounding of the output to dtype (with slack for fp32 sums).
inline double output_rtol(DType dtype) { return rounding_tolerance(dtype); }

inline bool perf_enabled() {
  const char* env = std::getenv("BRISK_OPS_PERF");
  return env != nullptr && std::string(env) == "1";
}

// The KV cache block size of the attention benchmarks: the engine's default (EngineOptions), or
// BRISK_PERF_BLOCK_SIZE (a power of two) to compare others.
inline int perf_block_size() {
  const char* env = std::getenv("BRISK_PERF_BLOCK_SIZE");
  const int size = env != nullptr ? std::atoi(env) : 0;
  const bool valid = size >= 8 && size <= 1024 && std::has_single_bit(static_cast<unsigned>(size));
  return valid ? size : EngineOptions{}.block_size;
}

// Seconds from a synchronized device through `repetitions` calls of run (queued back to back)
// to the device finishing them, per repetition.
inline double seconds_per_call(const std::function<void()>& run, int repetitions) {
  Backend& gpu = cuda_backend();
  gpu.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repetitions; ++i) run();
  gpu.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repetitions;
}

// Bytes a second (read and written) of a device-to-device copy of 512 MiB on this card, measured
// once and printed: the bandwidth limit of the perf lines (an H200 copies at about 4.17 TB/s, an
// H100 at about 3.0).
inline double device_copy_bytes_per_second() {
  static const double rate = [] {
    const int64_t n = int64_t{256} << 20;  // bf16 values: 512 MiB
    Tensor a(cuda_backend().allocator(), DType::kBF16, {n});
    Tensor b(cuda_backend().allocator(), DType::kBF16, {n});
    cuda_backend().copy(b, a);
    const double r = 2.0 * 2.0 * static_cast<double>(n) / seconds_per_call([&] { cuda_backend().copy(b, a); }, 10);
    std::printf("[perf] device copy rate %.1f GB/s (the bandwidth limit of the perf lines)\n", r / 1e9);
    return r;
  }();
  return rate;
}

// The share of this card's copy rate that moving `bytes` in `seconds` reaches.
inline double copy_rate_share(double bytes, double seconds) { return bytes / seconds / device_copy_bytes_per_second(); }

// Prints one timing: op, shape, time, achieved bandwidth / FLOP rate and the ratio to the nearer
// limit (this card's copy rate, or the FLOP peak); appends it as a JSON line to BRISK_OPS_PERF_JSON
// where set.
inline void print_perf(const std::string& op, const std::string& shape, double bytes, double flops, double seconds,
                       double peak_flops) {
  const double bandwidth = bytes / seconds;
  const double flop_rate = flops / seconds;
  const double copy_share = copy_rate_share(bytes, seconds), flop_share = flop_rate / peak_flops;
  const double ratio = std::max(copy_share, flop_share);  // a read-mostly kernel may pass the copy rate
  std::printf("[perf] %-16s %-44s %10.1f us %8.1f GB/s %8.1f TFLOP/s %5.1f%% of the %s\n", op.c_str(),
              shape.c_str(), seconds * 1e6, bandwidth / 1e9, flop_rate / 1e12, ratio * 100,
              flop_share > copy_share ? "FLOP peak" : "copy rate");
  if (const char* path = std::getenv("BRISK_OPS_PERF_JSON")) {
    if (FILE* file = std::fopen(path, "a")) {
      std::fprintf(file,
                   "{\"op\": \"%s\", \"shape\": \"%s\", \"time_us\": %.3f, \"gb_per_s\": %.3f, "
                   "\"tflop_per_s\": %.3f, \"ratio_to_limit\": %.4f}\n",
                   op.c_str(), shape.c_str(), seconds * 1e6, bandwidth / 1e9, flop_rate / 1e12, ratio);
      std::fclose(file);
    }
  }
}

// Runs fn a few times to warm up, then times iterations (queued back to back, one sync at the
// end) and prints them (print_perf).
inline void report_perf(const std::string& op, const std::string& shape, double bytes, double flops,
                        const std::function<void()>& fn, int iterations = 50,
                        double peak_flops = kPeakBf16FlopsPerSecond) {
  for (int i = 0; i < 3; ++i) fn();
  print_perf(op, shape, bytes, flops, seconds_per_call(fn, iterations), peak_flops);
}

// As report_perf, with the iterations recorded into one graph and replayed: the device time of a
// call as the engine's decode graphs run it (no host launch between calls; each kernel's start
// overlaps the one before through programmatic dependent launch).
inline void report_perf_graph(const std::string& op, const std::string& shape, double bytes, double flops,
                              const std::function<void()>& fn, int iterations = 50,
                              double peak_flops = kPeakBf16FlopsPerSecond) {
  Backend& gpu = cuda_backend();
  fn();
  std::unique_ptr<RecordedGraph> graph = gpu.record_graph([&] {
    for (int i = 0; i < iterations; ++i) fn();
  });
  ASSERT_NE(graph, nullptr);
  graph->replay();
  const double seconds = seconds_per_call([&] { graph->replay(); }, 5) / iterations;
  print_perf(op, shape, bytes, flops, seconds, peak_flops);
}

// Fills a contiguous device tensor with uniform values in [-1, 1] (perf inputs: tensor-core
// throughput depends on the data, so zeros or garbage would flatter the numbers).
inline void fill_random(const Tensor& device, uint32_t seed = 1) {
  const int64_t rows = device.shape()[0];
  const int64_t row_elements = rows > 0 ? device.view().num_elements() / rows : 0;
  const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(row_elements, 1));
  std::mt19937 rng(seed);
  Shape chunk_shape = device.shape();
  chunk_shape[0] = std::min(chunk_rows, rows);
  Tensor chunk = random_tensor(device.dtype(), chunk_shape, rng);
  for (int64_t r = 0; r < rows; r += chunk_rows) {
    const int64_t count = std::min(chunk_rows, rows - r);
    cuda_backend().copy(device.view().slice(0, r, r + count), chunk.view().slice(0, 0, count));
  }
}

// Random bf16 [n, k] weights in enough copies to fill 256 MB: a benchmark that reads another copy
// each call reads from DRAM, as in a model's step, not from L2.
inline std::vector<Tensor> random_weight_copies(int64_t n, int64_t k) {
  std::vector<Tensor> copies;
  for (int i = 0; i < static_cast<int>(std::ceil(256e6 / (2.0 * n * k))); ++i) {
    copies.push_back(Tensor(cuda_backend().allocator(), DType::kBF16, {n, k}));
    fill_random(copies.back(), 2 + i);
  }
  return copies;
}

// The same for e4m3 [n, k] weights: finite codes of both signs (a hash of the index), copies
// filling `bytes` (at least one).
inline std::vector<Tensor> fp8_weight_copies(int64_t n, int64_t k, double bytes = 256e6) {
  Tensor host(cpu_allocator(), DType::kF8E4M3, {n, k});
  for (int64_t i = 0; i < n * k; ++i) {
    const uint32_t hash = static_cast<uint32_t>(i) * 2654435761u >> 24;
    host.data_as<uint8_t>()[i] = static_cast<uint8_t>(hash % 0x7e | (i & 1) << 7);
  }
  std::vector<Tensor> copies;
  for (int i = 0; i < std::max(1, static_cast<int>(std::ceil(bytes / (n * k)))); ++i) copies.push_back(to_device(host));
  return copies;
}

// A RoPE table [max_positions, head_dim] f32: cos of each position's angles, then their sin.
inline Tensor make_cos_sin(int64_t max_positions, int head_dim, double base = 10000.0) {
  std::vector<double> values(max_positions * head_dim);
  const int half = head_dim / 2;
  for (int64_t p = 0; p < max_positions; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p * std::pow(base, -2.0 * i / head_dim);
      values[p * head_dim + i] = std::cos(angle);
      values[p * head_dim + half + i] = std::sin(angle);
    }
  }
  return make_tensor(DType::kF32, {max_positions, head_dim}, values);
}

inline std::vector<double> host_doubles(const TensorView& device) { return to_doubles(to_host(device)); }

}  // namespace brisk::testing
