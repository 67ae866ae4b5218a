// cuBLASLt's configurations for the decode-batch products brisk hands it (Llama-3-8B, M 16-256, or
// the M listed in BRISK_PERF_ROWS), bf16 and FP8 with per-row scales: the heuristic's first choice
// (brisk's plan, gemm_runner.cc) against every candidate the heuristic lists and each of them split
// over K, timed on weights rotating over 256 MB of copies (reads from DRAM, as in a model's step). A
// benchmark only (BRISK_OPS_PERF=1): it prints the first choice, the best candidate and the best
// split with their tile, stages and split count, the evidence for choosing plans by timing
// (docs/perf/gemm.md, docs/perf/fp8.md); with BRISK_PERF_ENUMERATE=1 also the best of every
// algorithm, tile and stage count cuBLASLt takes for the shape (enumerated_configs), then the
// fastest few of all with each cluster shape, custom option and CTA swizzle it takes (variants).
#include <gtest/gtest.h>
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

#define CHECK_CUBLAS(expr) ASSERT_EQ((expr), CUBLAS_STATUS_SUCCESS) << #expr

struct AlgoConfig {
  cublasLtMatmulAlgo_t algo;
  int tile = 0, stages = 0, split = 1, cluster = 0, id = 0, custom = 0, swizzle = 0;
};

AlgoConfig describe_algo(const cublasLtMatmulAlgo_t& algo) {
  auto attribute = [&]<typename T = uint32_t>(cublasLtMatmulAlgoConfigAttributes_t which, T unset) {
    T value = unset;  // the attribute's own size, or cuBLASLt refuses the read
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, which, &value, sizeof(value), &written);
    return static_cast<int>(value);
  };
  return {algo, attribute(CUBLASLT_ALGO_CONFIG_TILE_ID, 0u), attribute(CUBLASLT_ALGO_CONFIG_STAGES_ID, 0u),
          std::max(attribute(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, int32_t{1}), 1),
          attribute(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, uint16_t{0}), attribute(CUBLASLT_ALGO_CONFIG_ID, int32_t{0}),
          attribute(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, 0u), attribute(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, 0u)};
}

std::string config_str(const AlgoConfig& c) {
  return "id " + std::to_string(c.id) + " tile " + std::to_string(c.tile) + " stages " + std::to_string(c.stages) + " cluster " +
         std::to_string(c.cluster) + " split " + std::to_string(c.split) + " custom " + std::to_string(c.custom) +
         " swizzle " + std::to_string(c.swizzle);
}

// The capability list `cap` (uint32 ids) of an algorithm, or {0} (cuBLASLt's choice) where it lists none.
std::vector<uint32_t> cap_ids(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t cap) {
  size_t written = 0;
  std::vector<uint32_t> ids;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, cap, nullptr, 0, &written) == CUBLAS_STATUS_SUCCESS && written > 0) {
    ids.resize(written / sizeof(uint32_t));
    cublasLtMatmulAlgoCapGetAttribute(&algo, cap, ids.data(), ids.size() * sizeof(uint32_t), &written);
  }
  if (ids.empty()) ids.push_back(0);
  return ids;
}

// Whether cuBLASLt takes algo for the problem within the workspace.
bool accepted(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
              cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t& algo, size_t workspace_bytes) {
  cublasLtMatmulHeuristicResult_t check{};
  return cublasLtMatmulAlgoCheck(handle, desc, a, b, d, d, &algo, &check) == CUBLAS_STATUS_SUCCESS &&
         check.workspaceSize <= workspace_bytes;
}

// Every algorithm cuBLASLt has for the operand type with each tile and stage count it lists
// (cluster shape and the rest left to cuBLASLt), where cublasLtMatmulAlgoCheck takes it: the
// configurations the heuristic does not offer (BRISK_PERF_ENUMERATE=1).
std::vector<AlgoConfig> enumerated_configs(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                           cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                           cublasLtMatrixLayout_t d, cudaDataType_t operand, size_t workspace_bytes) {
  std::vector<int> ids(256);
  int found = 0;
  std::vector<AlgoConfig> configs;
  if (cublasLtMatmulAlgoGetIds(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, operand, operand, CUDA_R_16BF, CUDA_R_16BF,
                               static_cast<int>(ids.size()), ids.data(), &found) != CUBLAS_STATUS_SUCCESS)
    return configs;
  for (int i = 0; i < found; ++i) {
    cublasLtMatmulAlgo_t base{};
    if (cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, operand, operand, CUDA_R_16BF, CUDA_R_16BF,
                               ids[i], &base) != CUBLAS_STATUS_SUCCESS)
      continue;
    for (uint32_t tile : cap_ids(base, CUBLASLT_ALGO_CAP_TILE_IDS))
      for (uint32_t stages : cap_ids(base, CUBLASLT_ALGO_CAP_STAGES_IDS)) {
        cublasLtMatmulAlgo_t algo = base;
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile));
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages));
        if (accepted(handle, desc, a, b, d, algo, workspace_bytes)) configs.push_back(describe_algo(algo));
      }
  }
  return configs;
}

// The configuration c with each cluster shape (cuBLASLt lists none: Hopper's usual ones are tried),
// custom option and CTA swizzle cublasLtMatmulAlgoCheck takes, c itself left out.
std::vector<AlgoConfig> config_variants(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                        cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d, const AlgoConfig& c,
                                        size_t workspace_bytes) {
  int32_t custom_max = 0, swizzle_support = 0;
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&c.algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max, sizeof(custom_max),
                                    &written);
  cublasLtMatmulAlgoCapGetAttribute(&c.algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle_support,
                                    sizeof(swizzle_support), &written);
  std::vector<AlgoConfig> variants;
  for (uint16_t cluster : {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                           CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
                           CUBLASLT_CLUSTER_SHAPE_1x4x1})
    for (uint32_t custom = 0; custom <= static_cast<uint32_t>(std::max(custom_max, 0)); ++custom)
      for (uint32_t swizzle = 0; swizzle <= (swizzle_support != 0 ? 1u : 0u); ++swizzle) {
        if (static_cast<int>(cluster) == c.cluster && static_cast<int>(custom) == c.custom &&
            static_cast<int>(swizzle) == c.swizzle)
          continue;
        cublasLtMatmulAlgo_t algo = c.algo;
        if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                 sizeof(cluster)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                                 sizeof(custom)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                                 sizeof(swizzle)) != CUBLAS_STATUS_SUCCESS)
          continue;
        if (accepted(handle, desc, a, b, d, algo, workspace_bytes)) variants.push_back(describe_algo(algo));
      }
  return variants;
}

// The M of the sweep: BRISK_PERF_ROWS (comma-separated) or these.
std::vector<int64_t> perf_rows(std::vector<int64_t> rows) {
  if (const char* env = std::getenv("BRISK_PERF_ROWS")) {
    rows.clear();
    for (const char* p = env; *p != 0;) {
      char* end = nullptr;
      const long long m = std::strtoll(p, &end, 10);
      if (end == p) break;
      rows.push_back(m);
      p = *end == ',' ? end + 1 : end;
    }
  }
  return rows;
}

// fp8: e4m3 operands with per-row scales (OUTER_VEC_32F on both, gemm_fp8's cuBLASLt path).
void sweep_configs(bool fp8) {
  Allocator& alloc = cuda_backend().allocator();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cublasLtHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasLtCreate(&handle));
  const size_t workspace_bytes = size_t{32} << 20;
  Tensor workspace(alloc, DType::kU8, {static_cast<int64_t>(workspace_bytes)});
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);

  struct Shape { const char* name; int64_t n, k; };
  for (const Shape& s : {Shape{"qkv", 6144, 4096}, Shape{"o_proj", 4096, 4096}, Shape{"gate_up", 28672, 4096},
                         Shape{"down", 4096, 14336}}) {
    const std::vector<Tensor> w = random_weight_copies(s.n, s.k);
    const int copies = static_cast<int>(w.size());
    for (int64_t m : perf_rows({16, 64, 96, 128, 168, 200, 256})) {
      Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, DType::kBF16, {m, s.n});
      fill_random(x, 1);
      // FP8 reads the first bytes of the bf16 weights and x as e4m3 codes, with zero scales: only
      // the time counts here.
      Tensor scales(alloc, DType::kF32, {s.n + m});
      cudaMemset(scales.view().data(), 0, (s.n + m) * sizeof(float));
      cublasLtMatmulDesc_t desc = nullptr;
      cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
      CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t transpose = CUBLAS_OP_T, no_transpose = CUBLAS_OP_N;
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
      CHECK_CUBLAS(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof(no_transpose)));
      const cudaDataType_t operand = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
      if (fp8) {
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        const float* w_scale = scales.view().data_as<float>();
        const float* x_scale = w_scale + s.n;
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)));
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)));
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                                    sizeof(w_scale)));
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale,
                                                    sizeof(x_scale)));
      }
      CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a, operand, s.k, s.n, s.k));
      CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b, operand, s.k, m, s.k));
      CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, s.n, m, s.n));
      cublasLtMatmulPreference_t preference = nullptr;
      CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
      CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace_bytes, sizeof(workspace_bytes)));
      std::vector<cublasLtMatmulHeuristicResult_t> results(64);
      int found = 0;
      CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, d, d, preference, 64, results.data(), &found));
      cublasLtMatmulPreferenceDestroy(preference);
      ASSERT_GT(found, 0);

      // Candidates: the heuristic's, then each of them split over K in 2-8 parts where cuBLASLt
      // accepts the split (cublasLtMatmulAlgoCheck) within the workspace.
      std::vector<AlgoConfig> candidates;
      for (int i = 0; i < found; ++i) candidates.push_back(describe_algo(results[i].algo));
      const size_t listed = candidates.size();
      for (size_t i = 0; i < listed; ++i) {
        if (candidates[i].split > 1) continue;
        for (uint32_t split : {2u, 3u, 4u, 6u, 8u}) {
          for (cublasLtReductionScheme_t scheme : {CUBLASLT_REDUCTION_SCHEME_INPLACE,
                                                   CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE}) {
            cublasLtMatmulAlgo_t algo = candidates[i].algo;
            const uint32_t scheme_value = scheme;
            if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                                     sizeof(split)) != CUBLAS_STATUS_SUCCESS ||
                cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme_value,
                                                     sizeof(scheme_value)) != CUBLAS_STATUS_SUCCESS)
              continue;
            if (!accepted(handle, desc, a, b, d, algo, workspace_bytes)) continue;
            candidates.push_back(describe_algo(algo));
            break;
          }
        }
      }

      const size_t splits_end = candidates.size();
      const char* enumerate_env = std::getenv("BRISK_PERF_ENUMERATE");
      const bool enumerate = enumerate_env != nullptr && std::string(enumerate_env) == "1";
      if (enumerate)
        for (const AlgoConfig& c : enumerated_configs(handle, desc, a, b, d, operand, workspace_bytes))
          candidates.push_back(c);

      const float alpha = 1.0f, beta = 0.0f;
      int next = 0;
      auto time_us = [&](const AlgoConfig& c) {
        auto run = [&] {
          return cublasLtMatmul(handle, desc, &alpha, w[next++ % copies].view().data(), a, x.view().data(), b,
                                &beta, y.view().data(), d, y.view().data(), d, &c.algo, workspace.view().data(),
                                workspace_bytes, stream);
        };
        for (int i = 0; i < 3; ++i)
          if (run() != CUBLAS_STATUS_SUCCESS) return -1.0;
        constexpr int kIterations = 20;
        cudaEventRecord(start, stream);
        for (int i = 0; i < kIterations; ++i) run();
        cudaEventRecord(stop, stream);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        return 1e3 * ms / kIterations;
      };
      double first = -1, best = 1e30, best_split = 1e30, best_enumerated = 1e30;
      AlgoConfig best_config{}, best_split_config{}, best_enumerated_config{};
      std::vector<std::pair<double, size_t>> timed;
      for (size_t i = 0; i < candidates.size(); ++i) {
        const double us = time_us(candidates[i]);
        if (us < 0) continue;
        timed.emplace_back(us, i);
        if (i == 0) first = us;
        if (i < listed && us < best) best = us, best_config = candidates[i];
        if (i >= listed && i < splits_end && us < best_split) best_split = us, best_split_config = candidates[i];
        if (i >= splits_end && us < best_enumerated) best_enumerated = us, best_enumerated_config = candidates[i];
      }
      ASSERT_GT(first, 0) << "the heuristic's first choice failed to run";
      const double gb = (fp8 ? 1.0 : 2.0) * s.n * s.k / 1e3;  // GB/s at one microsecond
      char split[128] = "none accepted";
      if (best_split < 1e29)
        std::snprintf(split, sizeof(split), "%.1f us (%s, %.0f GB/s)", best_split,
                      config_str(best_split_config).c_str(), gb / best_split);
      std::printf("[cublaslt%s] %-8s M %4lld: first %7.1f us (%s, %.0f GB/s) | best of %zu listed %7.1f us (%s)"
                  " | best of %zu splits %s",
                  fp8 ? " fp8" : "", s.name, static_cast<long long>(m), first, config_str(candidates[0]).c_str(),
                  gb / first, listed, best, config_str(best_config).c_str(), splits_end - listed, split);
      if (candidates.size() > splits_end)
        std::printf(" | best of %zu enumerated %.1f us (%s)", candidates.size() - splits_end, best_enumerated,
                    config_str(best_enumerated_config).c_str());
      if (enumerate) {  // the fastest kVariantBases of everything timed, varied
        constexpr size_t kVariantBases = 8;
        std::sort(timed.begin(), timed.end());
        double best_variant = 1e30;
        AlgoConfig best_variant_config{};
        size_t num_variants = 0;
        for (size_t j = 0; j < std::min(kVariantBases, timed.size()); ++j)
          for (const AlgoConfig& v :
               config_variants(handle, desc, a, b, d, candidates[timed[j].second], workspace_bytes)) {
            ++num_variants;
            const double us = time_us(v);
            if (us >= 0 && us < best_variant) best_variant = us, best_variant_config = v;
          }
        if (best_variant < 1e29)
          std::printf(" | best of %zu variants %.1f us (%s)", num_variants, best_variant,
                      config_str(best_variant_config).c_str());
        else
          std::printf(" | %zu variants, none %s", num_variants, num_variants == 0 ? "accepted" : "ran");
      }
      std::printf("\n");
      cublasLtMatrixLayoutDestroy(a);
      cublasLtMatrixLayoutDestroy(b);
      cublasLtMatrixLayoutDestroy(d);
      cublasLtMatmulDescDestroy(desc);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasLtDestroy(handle);
  cudaStreamDestroy(stream);
}

TEST(GemmPerf, CublasLtConfigs) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  sweep_configs(false);
}

TEST(GemmPerf, CublasLtFp8Configs) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  sweep_configs(true);
}

}  // namespace
}  // namespace brisk::testing
