// gemm: y = x w^T (+ bias), fp32 accumulation, output in y's dtype. Decode-sized products (M <=
// kGemvMaxM, 16-bit x and w of one dtype, aligned) run brisk's gemv kernel (kernels/gemv.cu);
// everything else runs cuBLASLt (CUBLAS_COMPUTE_32F). Matmul descriptors, layouts and the heuristic's algorithm are cached per shape,
// strides, dtypes and pointer alignments, so a warm step loop only calls cublasLtMatmul.
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
#include "backend/cuda/ops/cuda_ops.h"

namespace brisk::cuda {

class GemmRunner {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  explicit GemmRunner(Allocator& allocator);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  void run(const OpContext& ctx, const GemmParams& p);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool bias_epilogue = false;  // false: the bias (if any) is added by a kernel
  };
  // M, N, K, lda, ldb, ldd, operand dtype, output dtype, bias dtype (or -1), and the
  // alignments of w, x, y and bias.
  using Key = std::array<int64_t, 13>;

  // Runs d = x w^T [+ bias] for x and w of one dtype, d of a dtype cuBLASLt can write.
  // Returns whether the bias was applied by the epilogue.
  bool matmul(const OpContext& ctx, TensorView x, TensorView w, TensorView bias, TensorView d);
  Plan& plan_for(const Key& key, TensorView x, TensorView w, TensorView bias, TensorView d);
  bool make_plan(Plan& plan, const Key& key, TensorView x, TensorView w, TensorView bias,
                 TensorView d, bool with_bias);
  static void destroy(Plan& plan);

  Allocator& allocator_;
  cublasLtHandle_t handle_ = nullptr;
  Tensor workspace_;  // [kWorkspaceBytes] u8
  std::mutex mutex_;
  std::map<Key, Plan> plans_;
};

}  // namespace brisk::cuda
