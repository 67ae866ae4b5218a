// The stream-K GEMM (kernels/streamk/gemm_streamk.h) through GemmRunner's explicit path, against
// the CPU reference; tolerances as gemm_parity_test.cc's (fp32 sums in different orders, one
// rounding of y). Cases cover every token tile, tiles split over many blocks (N of one tile, long
// K: every block adds to the same tile), tiles never split, K and N tails, a bias, f16, f32 y and
// strided x. GemmPerf.StreamK and GemmFp8Perf.StreamK time the paths side by side in graphs (the
// e4m3 kernel's parity cases are gemm_fp8_parity_test.cc's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/gemm_runner.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "backend/cuda/runtime/device.h"
#include "ops_test_util.h"

namespace brisk::testing {
namespace {

using cuda::GemmRunner;

// A GemmRunner of its own on a stream of its own, ordered after the backend's work.
struct StreamRunner {
  GemmRunner runner{cuda_backend().allocator()};
  cudaStream_t stream = nullptr;
  cuda::OpContext ctx;

  StreamRunner() {
    BRISK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ctx.stream = stream;
    ctx.allocator = &cuda_backend().allocator();
    ctx.num_sms = cuda::select_device().num_sms;
  }
  ~StreamRunner() { cudaStreamDestroy(stream); }
  void run(const GemmParams& p, GemmRunner::Path path) {
    cuda_backend().synchronize();
    runner.run(ctx, p, path);
    BRISK_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void run_fp8(const GemmFp8Params& p, GemmRunner::Path path) {
    cuda_backend().synchronize();
    cuda::gemm_fp8(ctx, runner, p, path);
    BRISK_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
};

StreamRunner& stream_runner() {
  static StreamRunner r;
  return r;
}

struct StreamKCase {
  int64_t m, n, k;
  DType dtype, y;
  bool bias, strided_x;
};

std::string describe(const StreamKCase& c) {
  return "stream-K M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) + " " +
         dtype_str(c.dtype) + " -> " + dtype_str(c.y) + (c.bias ? " +bias" : "") + (c.strided_x ? " strided x" : "");
}

void check_streamk(const StreamKCase& c) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 7 + c.k));
  const int64_t x_cols = c.strided_x ? c.k + 64 : c.k;
  Tensor x_full = random_tensor(c.dtype, {c.m, x_cols}, rng);
  Tensor w = random_tensor(c.dtype, {c.n, c.k}, rng);
  Tensor bias = random_tensor(c.y, {c.n}, rng);
  TensorView x = x_full.view().slice(1, 0, c.k);
  Tensor expected = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm({x, w, c.bias ? bias.view() : TensorView(), expected});

  Tensor x_d = to_device(x_full), w_d = to_device(w), bias_d = to_device(bias);
  Tensor y_d(cuda_backend().allocator(), c.y, {c.m, c.n});
  const GemmParams p{x_d.view().slice(1, 0, c.k), w_d, c.bias ? bias_d.view() : TensorView(), y_d};
  stream_runner().run(p, GemmRunner::Path::kStreamK);
  const std::vector<double> first = host_doubles(y_d);
  expect_close(first, to_doubles(expected), 2e-4 * std::sqrt(static_cast<double>(c.k)), output_rtol(c.y),
               describe(c));
  // The same launch again: the same bits (the partials are added in block order).
  stream_runner().run(p, GemmRunner::Path::kStreamK);
  EXPECT_EQ(host_doubles(y_d), first) << describe(c) << ": a second run differs";
}

TEST(Gemm, StreamKMatchesCpu) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const StreamKCase cases[] = {
      {1, 1000, 520, bf16, bf16, true, false},      // 16-token tile, K tail (520 = 8 chunks + 8)
      {3, 6144, 4096, bf16, bf16, false, false},    // qkv: 48 tiles over every SM
      {8, 128, 14336, bf16, bf16, false, false},    // one tile, every block adds to it
      {16, 4096, 64, f16, f16, true, true},         // one chunk a tile: no tile split
      {17, 300, 1000, bf16, f32, true, false},      // 32 tokens, N tail (300), f32 y
      {33, 4096, 4096, bf16, bf16, false, true},    // 64 tokens
      {64, 2048, 2048, f16, f32, false, false},
      {64, 128256, 256, bf16, f32, true, true},     // vocabulary-sized: 1002 tiles, most whole
  };
  for (const StreamKCase& c : cases) check_streamk(c);
}

TEST(Gemm, StreamKRejectsWhatItCannotTake) {
  Allocator& alloc = cuda_backend().allocator();
  Tensor x(alloc, DType::kBF16, {65, 64}), w(alloc, DType::kBF16, {64, 64}), y(alloc, DType::kBF16, {65, 64});
  EXPECT_ERROR_CONTAINS(stream_runner().run({x, w, {}, y}, GemmRunner::Path::kStreamK),
                        "stream-K kernel cannot take");
  Tensor xf(alloc, DType::kF32, {4, 64}), yf(alloc, DType::kBF16, {4, 64});
  EXPECT_ERROR_CONTAINS(stream_runner().run({xf, w, {}, yf}, GemmRunner::Path::kStreamK),
                        "stream-K kernel cannot take");
}

// gemm_fp8 with a named kernel: stream-K takes per-channel scales up to M 16, no block scales;
// there is no gemv for FP8 weights.
TEST(GemmFp8, NamedPathsRejectWhatTheyCannotTake) {
  Allocator& alloc = cuda_backend().allocator();
  StreamRunner& r = stream_runner();
  Tensor w(alloc, DType::kF8E4M3, {128, 256});
  Tensor channel = to_device(make_tensor(DType::kF32, {128, 1}, std::vector<double>(128, 1e-3)));
  Tensor blocks = to_device(make_tensor(DType::kF32, {128, 2}, std::vector<double>(256, 1e-3)));
  Tensor x(alloc, DType::kBF16, {17, 256}), y(alloc, DType::kBF16, {17, 128});
  fill_random(x, 1);
  EXPECT_ERROR_CONTAINS(r.run_fp8({x, w, channel, {}, 0, {}, y}, GemmRunner::Path::kStreamK),
                        "stream-K kernel cannot take");
  const TensorView x16 = x.view().slice(0, 0, 16), y16 = y.view().slice(0, 0, 16);
  EXPECT_ERROR_CONTAINS(r.run_fp8({x16, w, blocks, {}, 128, {}, y16}, GemmRunner::Path::kStreamK),
                        "stream-K kernel cannot take");
  EXPECT_ERROR_CONTAINS(r.run_fp8({x16, w, channel, {}, 0, {}, y16}, GemmRunner::Path::kGemv), "no such path");
}

// Microseconds a call of path, the calls recorded into one graph on the runner's stream and
// replayed (as the engine's decode graphs run them).
double graph_us(StreamRunner& r, const std::function<void()>& fn, int iterations) {
  cuda_backend().synchronize();
  fn();
  BRISK_CUDA_CHECK(cudaStreamSynchronize(r.stream));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  BRISK_CUDA_CHECK(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < iterations; ++i) fn();
  BRISK_CUDA_CHECK(cudaStreamEndCapture(r.stream, &graph));
  BRISK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  BRISK_CUDA_CHECK(cudaEventCreate(&start));
  BRISK_CUDA_CHECK(cudaEventCreate(&stop));
  BRISK_CUDA_CHECK(cudaGraphLaunch(exec, r.stream));
  BRISK_CUDA_CHECK(cudaEventRecord(start, r.stream));
  constexpr int kReplays = 5;
  for (int i = 0; i < kReplays; ++i) BRISK_CUDA_CHECK(cudaGraphLaunch(exec, r.stream));
  BRISK_CUDA_CHECK(cudaEventRecord(stop, r.stream));
  BRISK_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  BRISK_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 1e3 * ms / (kReplays * iterations);
}

// Llama-3-8B's projections at decode batch sizes, weights rotating over 256 MB of copies: the
// runner's choice, the stream-K kernel and cuBLASLt (or the gemv at M <= 2) in the same run, us a
// call and TB/s of weights.
TEST(GemmPerf, StreamK) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  StreamRunner& r = stream_runner();
  struct Shape { const char* name; int64_t n, k; DType y; };
  const Shape shapes[] = {{"qkv", 6144, 4096, DType::kBF16}, {"o_proj", 4096, 4096, DType::kBF16},
                          {"gate_up", 28672, 4096, DType::kBF16}, {"down", 4096, 14336, DType::kBF16},
                          {"lm_head", 128256, 4096, DType::kF32}};
  for (const Shape& s : shapes) {
    const std::vector<Tensor> w = random_weight_copies(s.n, s.k);
    const int copies = static_cast<int>(w.size());
    for (int64_t m : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64}) {
      if (s.y == DType::kF32 && m != 1 && m != 8 && m != 32 && m != 64) continue;
      Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, s.y, {m, s.n});
      fill_random(x, 1);
      const double weight_bytes = 2.0 * s.n * s.k;
      auto time_path = [&](GemmRunner::Path path) {
        int next = 0;
        return graph_us(r, [&] { r.runner.run(r.ctx, {x, w[next++ % copies], {}, y}, path); }, 40);
      };
      const GemmRunner::Path other = m <= cuda::kGemvMaxM ? GemmRunner::Path::kGemv : GemmRunner::Path::kCublasLt;
      const double routed = time_path(GemmRunner::Path::kAuto), streamk = time_path(GemmRunner::Path::kStreamK),
                   peer = time_path(other);
      const char* peer_name = m <= cuda::kGemvMaxM ? "gemv" : "cuBLASLt";
      const double share = 100 * copy_rate_share(weight_bytes, streamk * 1e-6);
      std::printf("[perf] gemm %-8s M %4lld N %5lld K %5lld  auto %7.2f us  stream-K %7.2f us (%.2f TB/s, %.0f%% of "
                  "the copy rate)  %s %7.2f us (%.2f TB/s)  stream-K / %s %.3f\n",
                  s.name, static_cast<long long>(m), static_cast<long long>(s.n), static_cast<long long>(s.k), routed,
                  streamk, weight_bytes / streamk / 1e6, share, peer_name, peer, weight_bytes / peer / 1e6, peer_name,
                  streamk / peer);
    }
  }
}

// The same with FP8 weights (per-channel scales, x quantized per token; the quantization is in
// every path's time) up to stream-K's M 16: the route's choice (the decode kernel to M 8), stream-K
// and cuBLASLt.
TEST(GemmFp8Perf, StreamK) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  StreamRunner& r = stream_runner();
  struct Shape { const char* name; int64_t n, k; };
  const Shape shapes[] = {{"qkv", 6144, 4096}, {"o_proj", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}};
  for (const Shape& s : shapes) {
    const std::vector<Tensor> w = fp8_weight_copies(s.n, s.k);
    const int copies = static_cast<int>(w.size());
    Tensor scale = to_device(make_tensor(DType::kF32, {s.n, 1}, std::vector<double>(s.n, 1e-3)));
    for (int64_t m : {1, 4, 8, 9, 12, 16}) {
      Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, DType::kBF16, {cuda_backend().gemm_fp8_rows(m), s.n});
      fill_random(x, 1);
      const double weight_bytes = double(s.n) * s.k;
      auto time_path = [&](GemmRunner::Path path) {
        int next = 0;
        return graph_us(r, [&] { cuda::gemm_fp8(r.ctx, r.runner, {x, w[next++ % copies], scale, {}, 0, {}, y}, path); },
                        40);
      };
      const double routed = time_path(GemmRunner::Path::kAuto), streamk = time_path(GemmRunner::Path::kStreamK),
                   peer = time_path(GemmRunner::Path::kCublasLt);
      const double share = 100 * copy_rate_share(weight_bytes, streamk * 1e-6);
      std::printf("[perf] gemm_fp8 %-8s M %4lld N %5lld K %5lld  auto %7.2f us  stream-K %7.2f us (%.2f TB/s, %.0f%% "
                  "of the copy rate, %.0f TFLOP/s)  cuBLASLt %7.2f us (%.2f TB/s)  stream-K / cuBLASLt %.3f\n",
                  s.name, static_cast<long long>(m), static_cast<long long>(s.n), static_cast<long long>(s.k), routed,
                  streamk, weight_bytes / streamk / 1e6, share, 2.0 * m * s.n * s.k / streamk / 1e6, peer,
                  weight_bytes / peer / 1e6, streamk / peer);
    }
  }
}

}  // namespace
}  // namespace brisk::testing
