// gemm: y = x w^T (+ bias), fp32 accumulation, output in y's dtype. Decode-sized products of
// 16-bit x and w of one dtype (aligned rows) run brisk's kernels: the gemv (kernels/gemv.cu) or
// the stream-K GEMM (kernels/streamk/gemm_streamk.h), as route() chooses; everything else runs
// cuBLASLt (CUBLAS_COMPUTE_32F). Matmul descriptors, layouts and the heuristic's algorithm are cached per shape,
// strides, dtypes and pointer alignments, so a warm step loop only calls cublasLtMatmul.
//
// FP8 (run_fp8): e4m3 x and w with cuBLASLt's scaled matmul (sums promoted to fp32, no fast
// accumulation), the scales applied to the fp32 sums: per row (OUTER_VEC_32F: x_scale [m], w_scale
// [n]) or per 128-block (x: VEC128_32F, [groups, m]; w: BLK128x128_32F, [ceil(n / 128), groups]), both
// row-major (gemm_fp8.cc takes M and groups in multiples of 4 there).
//
// Operand dtypes: the model keeps weights as stored, so w may be bf16, f16 or f32.
// - x in w's dtype: one matmul (bf16/f16 inputs may write bf16/f16 or f32 directly).
// - otherwise x is converted to w's dtype in scratch first. For f32 weights (an f32 checkpoint
//   with bf16 activations) that is exact and the matmul is full fp32 (CUBLAS_COMPUTE_32F, no
//   TF32); for 16-bit weights with f32 activations x is rounded to the weights' dtype.
// - when cuBLASLt cannot write y's dtype (f32 operands, or an f16/bf16 mismatch) the result goes
//   to an f32 scratch and is converted.
// The bias uses cuBLASLt's bias epilogue when its dtype is the matmul's output dtype, else a
// small kernel adds it to the fp32 result (an f32 scratch when y is 16-bit), so y is rounded
// once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include <cublasLt.h>

#include "backend/backend.h"
#include "backend/cuda/kernels/streamk/gemm_streamk.h"
#include "backend/cuda/ops/cuda_ops.h"

namespace brisk::cuda {

class GemmRunner {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  static constexpr int kMaxStreamKGrid = 1024;

  explicit GemmRunner(Allocator& allocator);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Which kernel runs a product: kAuto is route()'s choice; the others (for parity tests and
  // benchmarks) run that kernel where it can take the operands, else throw.
  enum class Path { kAuto, kGemv, kStreamK, kCublasLt };
  void run(const OpContext& ctx, const GemmParams& p, Path path = Path::kAuto);
  // The kernel kAuto picks for these operands.
  static Path route(const GemmParams& p);
  // Launches the stream-K kernel with a's operands and tensor maps, on the runner's partials and
  // flags (its grid and workspace filled in here).
  void launch_streamk(const OpContext& ctx, StreamKArgs a, const CUtensorMap& w_map, const CUtensorMap& x_map);

  enum class Fp8Scales { kPerRow = 1, kBlocks128 = 2 };
  // Whether cuBLASLt has an algorithm for run_fp8 with these operands (and their bias in y's dtype).
  bool fp8_supported(TensorView x_q, TensorView w, Fp8Scales scales, TensorView bias, TensorView y);
  // y = (x_q * x_scale) (w * w_scale)^T [+ bias] for e4m3 x_q [m, k] and w [n, k] (scale layouts
  // above), where fp8_supported.
  void run_fp8(const OpContext& ctx, TensorView x_q, const float* x_scale, TensorView w, const float* w_scale,
               Fp8Scales scales, TensorView bias, TensorView y);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool bias_epilogue = false;  // false: the bias (if any) is added by a kernel
    bool usable = false;         // false: cuBLASLt has no algorithm (FP8 plans only; run throws)
  };
  // M, N, K, lda, ldb, ldd, operand dtype, output dtype, bias dtype (or -1), the alignments of
  // w, x, y and bias, and the FP8 scale form (0 for 16- and 32-bit operands).
  using Key = std::array<int64_t, 14>;

  // Runs d = x w^T [+ bias] for x and w of one dtype, d of a dtype cuBLASLt can write.
  // Returns whether the bias was applied by the epilogue.
  bool matmul(const OpContext& ctx, TensorView x, TensorView w, TensorView bias, TensorView d);
  static Key key_of(TensorView x, TensorView w, TensorView bias, TensorView d, int64_t fp8_scales);
  // The cached plan, made on first use: one without an algorithm has usable false.
  Plan& plan_for(const Key& key, TensorView x, TensorView w, TensorView bias, TensorView d);
  bool make_plan(Plan& plan, const Key& key, TensorView x, TensorView w, TensorView bias,
                 TensorView d, bool with_bias);
  void launch(const OpContext& ctx, Plan& plan, TensorView x, TensorView w, TensorView bias, TensorView d);
  static void destroy(Plan& plan);
  void run_streamk(const OpContext& ctx, const GemmParams& p);

  Allocator& allocator_;
  cublasLtHandle_t handle_ = nullptr;
  Tensor workspace_;  // [kWorkspaceBytes] u8: cuBLASLt's, or the stream-K kernel's partials
  Tensor streamk_flags_;  // [kMaxStreamKGrid] i32, zero between stream-K launches
  std::mutex mutex_;
  std::map<Key, Plan> plans_;
};

// gemm_fp8 (cuda_ops.h) with its kernel named: kStreamK or kCublasLt (tests and benchmarks), or
// kAuto for the route's choice; an error where the named kernel cannot take the product.
void gemm_fp8(const OpContext& ctx, GemmRunner& dense, const GemmFp8Params& p, GemmRunner::Path path);

}  // namespace brisk::cuda
