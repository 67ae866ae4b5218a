#include "backend/cuda/ops/gemm_runner.h"

#include <algorithm>

#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/streamk/gemm_streamk.h"
#include "backend/cuda/kernels/tensor_map.h"
#include "backend/cuda/ops/op_checks.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

bool rows_aligned(const TensorView& v) {
  return reinterpret_cast<uintptr_t>(v.data()) % 16 == 0 && v.stride(0) % 8 == 0;
}

// Both decode kernels take 16-bit x and w of one dtype with 16-byte aligned rows and K % 8 == 0.
bool decode_operands(const GemmParams& p) {
  const DType t = p.w.dtype();
  return (t == DType::kBF16 || t == DType::kF16) && p.x.dtype() == t && p.x.size(1) % 8 == 0 &&
         rows_aligned(p.x) && rows_aligned(p.w);
}

bool gemv_fits(const GemmParams& p) { return p.x.size(0) <= kGemvMaxM && decode_operands(p); }
bool streamk_fits(const GemmParams& p) {
  return p.x.size(0) <= gemm_streamk_max_m(StreamKOperands::kBF16) && decode_operands(p);
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kF16: return CUDA_R_16F;
    case DType::kF8E4M3: return CUDA_R_8F_E4M3;
    default: return CUDA_R_16BF;
  }
}

// The largest power of two dividing the address, capped at 256 (cuBLASLt's default assumption).
int64_t alignment(const void* ptr) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  if (address == 0) return 256;
  return std::min<int64_t>(256, static_cast<int64_t>(address & (~address + 1)));
}

// The leading dimension of a row-major view seen as column-major: its row stride (at least the
// row length, which a single-row view may not state).
int64_t leading_dim(const TensorView& v) { return std::max(v.stride(0), v.size(1)); }

// Whether cuBLASLt can write d in this dtype from operands of operand_dtype.
bool writable(DType operand_dtype, DType out_dtype) {
  if (operand_dtype == DType::kF32) return out_dtype == DType::kF32;
  return out_dtype == operand_dtype || out_dtype == DType::kF32;
}

}  // namespace

GemmRunner::GemmRunner(Allocator& allocator)
    : allocator_(allocator),
      workspace_(allocator, DType::kU8, {static_cast<int64_t>(kWorkspaceBytes)}),
      streamk_flags_(allocator, DType::kI32, {kMaxStreamKGrid}) {
  BRISK_CUDA_CHECK(cudaMemset(streamk_flags_.view().data(), 0, streamk_flags_.view().num_bytes()));
  BRISK_CUDA_CHECK(cublasLtCreate(&handle_));
}

GemmRunner::~GemmRunner() {
  for (auto& [key, plan] : plans_) destroy(plan);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

void GemmRunner::destroy(Plan& plan) {  // destructor path: errors are ignored
  if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.d) cublasLtMatrixLayoutDestroy(plan.d);
  if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
  plan = Plan{};
}

bool GemmRunner::make_plan(Plan& plan, const Key& key, TensorView x, TensorView w, TensorView bias,
                           TensorView d, bool with_bias) {
  destroy(plan);
  const int64_t m = x.size(0), n = w.size(0), k = x.size(1);
  const cudaDataType_t operand = cuda_type(w.dtype());
  // Row-major y[M, N] = x[M, K] w[N, K]^T is column-major y^T[N, M] = w^T x^T: A = w (stored
  // K x N column-major, transposed), B = x (K x M), D = y (N x M).
  BRISK_CUDA_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, no_transpose = CUBLAS_OP_N;
  BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                  &transpose, sizeof(transpose)));
  BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                  &no_transpose, sizeof(no_transpose)));
  if (key[13] != 0) {  // FP8: the scale forms of A (w) and B (x); their pointers are set per call
    const bool blocks = key[13] == static_cast<int64_t>(Fp8Scales::kBlocks128);
    const int32_t a_mode = blocks ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                  : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    const int32_t b_mode = blocks ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                  : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode,
                                                    sizeof(a_mode)));
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode,
                                                    sizeof(b_mode)));
    // cuBLASLt lists no algorithm for these modes until scale pointers are set: any device
    // address until the call's own.
    const void* placeholder = workspace_.view().data();
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder,
                                                    sizeof(placeholder)));
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder,
                                                    sizeof(placeholder)));
  }
  if (with_bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                    &epilogue, sizeof(epilogue)));
    const void* bias_ptr = bias.data();
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &bias_ptr, sizeof(bias_ptr)));
  }
  BRISK_CUDA_CHECK(cublasLtMatrixLayoutCreate(&plan.a, operand, k, n, leading_dim(w)));
  BRISK_CUDA_CHECK(cublasLtMatrixLayoutCreate(&plan.b, operand, k, m, leading_dim(x)));
  BRISK_CUDA_CHECK(cublasLtMatrixLayoutCreate(&plan.d, cuda_type(d.dtype()), n, m, leading_dim(d)));

  cublasLtMatmulPreference_t preference = nullptr;
  BRISK_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t workspace_bytes = kWorkspaceBytes;
  const uint32_t align_a = static_cast<uint32_t>(key[9]), align_b = static_cast<uint32_t>(key[10]),
                 align_d = static_cast<uint32_t>(key[11]);
  cublasLtMatmulHeuristicResult_t result{};
  int num_results = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                  &align_a, sizeof(align_a));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &align_b, sizeof(align_b));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                  &align_d, sizeof(align_d));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                  &align_d, sizeof(align_d));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.d, plan.d,
                                            preference, 1, &result, &num_results);
  cublasLtMatmulPreferenceDestroy(preference);
  // "Not supported" means no algorithm for this combination (e.g. the bias epilogue); the caller
  // then tries without it. Anything else is a real failure.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || num_results == 0) return false;
  BRISK_CUDA_CHECK(status);
  plan.algo = result.algo;
  plan.bias_epilogue = with_bias;
  plan.usable = true;
  return true;
}

GemmRunner::Plan& GemmRunner::plan_for(const Key& key, TensorView x, TensorView w, TensorView bias,
                                       TensorView d) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan plan;
  const bool want_bias = !bias.empty() && bias.dtype() == d.dtype();
  if (!(want_bias && make_plan(plan, key, x, w, bias, d, true)) &&
      !make_plan(plan, key, x, w, bias, d, false)) {
    destroy(plan);
    if (key[13] == 0)
      throw_error(ErrorCode::kBackend,
                  "gemm: cuBLASLt has no algorithm for x {} (row stride {}) * w {}^T (row stride {}) "
                  "-> {} (row stride {})", x.describe(), x.stride(0), w.describe(), w.stride(0),
                  d.describe(), d.stride(0));
  }
  return plans_.emplace(key, plan).first->second;
}

GemmRunner::Key GemmRunner::key_of(TensorView x, TensorView w, TensorView bias, TensorView d,
                                   int64_t fp8_scales) {
  return {x.size(0), w.size(0), x.size(1), leading_dim(w), leading_dim(x), leading_dim(d),
          static_cast<int64_t>(w.dtype()), static_cast<int64_t>(d.dtype()),
          bias.empty() ? -1 : static_cast<int64_t>(bias.dtype()),
          alignment(w.data()), alignment(x.data()), alignment(d.data()),
          bias.empty() ? 0 : alignment(bias.data()), fp8_scales};
}

void GemmRunner::launch(const OpContext& ctx, Plan& plan, TensorView x, TensorView w, TensorView bias,
                        TensorView d) {
  if (plan.bias_epilogue) {
    const void* bias_ptr = bias.data();
    BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &bias_ptr, sizeof(bias_ptr)));
  }
  const float alpha = 1.0f, beta = 0.0f;
  BRISK_CUDA_CHECK(cublasLtMatmul(handle_, plan.desc, &alpha, w.data(), plan.a, x.data(), plan.b,
                                  &beta, d.data(), plan.d, d.data(), plan.d, &plan.algo,
                                  workspace_.view().data(), kWorkspaceBytes, ctx.stream));
}

bool GemmRunner::matmul(const OpContext& ctx, TensorView x, TensorView w, TensorView bias,
                        TensorView d) {
  const Key key = key_of(x, w, bias, d, 0);
  std::lock_guard<std::mutex> lock(mutex_);
  Plan& plan = plan_for(key, x, w, bias, d);
  launch(ctx, plan, x, w, bias, d);
  return plan.bias_epilogue;
}

bool GemmRunner::fp8_supported(TensorView x_q, TensorView w, Fp8Scales scales, TensorView bias, TensorView y) {
  const Key key = key_of(x_q, w, bias, y, static_cast<int64_t>(scales));
  std::lock_guard<std::mutex> lock(mutex_);
  const Plan& plan = plan_for(key, x_q, w, bias, y);
  return plan.usable && (bias.empty() || plan.bias_epilogue);
}

void GemmRunner::run_fp8(const OpContext& ctx, TensorView x_q, const float* x_scale, TensorView w,
                         const float* w_scale, Fp8Scales scales, TensorView bias, TensorView y) {
  const Key key = key_of(x_q, w, bias, y, static_cast<int64_t>(scales));
  std::lock_guard<std::mutex> lock(mutex_);
  Plan& plan = plan_for(key, x_q, w, bias, y);
  BRISK_CHECK(plan.usable && (bias.empty() || plan.bias_epilogue),
              "gemm_fp8: cuBLASLt has no algorithm for x {} * w {}^T -> {}", x_q.describe(), w.describe(),
              y.describe());
  BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                                  sizeof(w_scale)));
  BRISK_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale,
                                                  sizeof(x_scale)));
  launch(ctx, plan, x_q, w, bias, y);
}

// gemv at M <= 2; the stream-K kernel where every SM streaming an equal share of the weights beats
// cuBLASLt's tiles: up to 16 rows, and vocabulary-sized products up to 64. Past that a unit's MMAs
// (64 weight rows a warpgroup) no longer hide under its weight loads and cuBLASLt's larger tiles
// win, with x's panels shared across a cluster too (docs/perf/gemm.md).
GemmRunner::Path GemmRunner::route(const GemmParams& p) {
  if (gemv_fits(p)) return Path::kGemv;
  const int64_t m = p.x.size(0), n = p.w.size(0);
  if (streamk_fits(p) && (m <= 16 || (m <= 64 && n >= 65536))) return Path::kStreamK;
  return Path::kCublasLt;
}

void GemmRunner::launch_streamk(const OpContext& ctx, StreamKArgs a, const CUtensorMap& w_map,
                                const CUtensorMap& x_map) {
  a.tokens = gemm_streamk_tokens(a.m, a.operands);
  a.grid = gemm_streamk_grid(a.n, a.k, a.operands, std::min(ctx.num_sms, kMaxStreamKGrid));
  BRISK_CHECK(a.grid * gemm_streamk_partial_floats(a.tokens) * 4 <= int64_t{kWorkspaceBytes},
              "gemm stream-K: {} blocks' partials exceed the workspace", a.grid);
  a.partials = static_cast<float*>(workspace_.view().data());
  a.flags = streamk_flags_.data_as<int>();
  std::lock_guard<std::mutex> lock(mutex_);  // the partials and flags serve one launch at a time
  launch_gemm_streamk(a, w_map, x_map, ctx.stream);
}

void GemmRunner::run_streamk(const OpContext& ctx, const GemmParams& p) {
  StreamKArgs a;
  a.m = p.x.size(0);
  a.n = p.w.size(0);
  a.k = p.x.size(1);
  const FloatType type = float_type(p.w.dtype());
  a.operands = type == FloatType::kF16 ? StreamKOperands::kF16 : StreamKOperands::kBF16;
  a.bias = p.bias.empty() ? nullptr : p.bias.data();
  a.bias_type = p.bias.empty() ? FloatType::kF32 : float_type(p.bias.dtype());
  a.y = p.y.data();
  a.y_stride = p.y.stride(0);
  a.y_type = float_type(p.y.dtype());
  const int tokens = gemm_streamk_tokens(a.m, a.operands);
  const CUtensorMap w_map =
      panel_tensor_map_16bit(p.w.data(), type, a.n, a.k, p.w.stride(0), kStreamKTileRows, "gemm", "w");
  const CUtensorMap x_map = panel_tensor_map_16bit(p.x.data(), type, a.m, a.k, p.x.stride(0), tokens, "gemm", "x");
  launch_streamk(ctx, a, w_map, x_map);
}

void GemmRunner::run(const OpContext& ctx, const GemmParams& p, Path path) {
  check_op_params(p, Device::kCuda);
  const int64_t m = p.x.size(0), n = p.w.size(0), k = p.x.size(1);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: y = bias or 0
    BiasArgs b;
    b.y = p.y.data();
    b.y_stride = p.y.stride(0);
    b.y_type = float_type(p.y.dtype());
    b.bias = p.bias.empty() ? nullptr : p.bias.data();
    b.bias_type = p.bias.empty() ? FloatType::kF32 : float_type(p.bias.dtype());
    b.num_rows = m;
    b.num_cols = n;
    b.accumulate = false;
    launch_bias(b, ctx.stream);
    return;
  }
  if (path == Path::kAuto) path = route(p);
  BRISK_CHECK(path != Path::kGemv || gemv_fits(p), "gemm: the gemv cannot take x {} * w {}^T", p.x.describe(),
              p.w.describe());
  BRISK_CHECK(path != Path::kStreamK || streamk_fits(p), "gemm: the stream-K kernel cannot take x {} * w {}^T",
              p.x.describe(), p.w.describe());
  if (path == Path::kStreamK) {
    run_streamk(ctx, p);
    return;
  }
  if (path == Path::kGemv) {
    GemvArgs g;
    g.x = p.x.data();
    g.x_stride = p.x.stride(0);
    g.w = p.w.data();
    g.w_stride = p.w.stride(0);
    g.w_type = float_type(p.w.dtype());
    g.bias = p.bias.empty() ? nullptr : p.bias.data();
    g.bias_type = p.bias.empty() ? FloatType::kF32 : float_type(p.bias.dtype());
    g.y = p.y.data();
    g.y_stride = p.y.stride(0);
    g.y_type = float_type(p.y.dtype());
    g.m = m;
    g.n = n;
    g.k = k;
    launch_gemv(g, ctx.stream);
    return;
  }
  const DType operand = p.w.dtype();
  TensorView x = p.x;
  Tensor x_scratch;
  if (x.dtype() != operand) {
    x_scratch = Tensor(allocator_, operand, {m, k});
    convert(ctx, x_scratch, x);
    x = x_scratch;
  }
  TensorView d = p.y;
  Tensor y_scratch;
  // A bias of another dtype than a 16-bit y is added in fp32 before y's single rounding:
  // adding it to an already rounded y would round twice (and cancel badly when bias ~ -y).
  const bool bias_needs_f32 = !p.bias.empty() && p.bias.dtype() != p.y.dtype() &&
                              p.y.dtype() != DType::kF32;
  if (!writable(operand, p.y.dtype()) || bias_needs_f32) {
    y_scratch = Tensor(allocator_, DType::kF32, {m, n});
    d = y_scratch;
  }
  const bool bias_done = matmul(ctx, x, p.w, p.bias, d);
  if (!p.bias.empty() && !bias_done) {
    BiasArgs b;
    b.y = d.data();
    b.y_stride = d.stride(0);
    b.y_type = float_type(d.dtype());
    b.bias = p.bias.data();
    b.bias_type = float_type(p.bias.dtype());
    b.num_rows = m;
    b.num_cols = n;
    b.accumulate = true;
    launch_bias(b, ctx.stream);
  }
  if (!y_scratch.empty()) convert(ctx, p.y, y_scratch);
}

}  // namespace brisk::cuda
