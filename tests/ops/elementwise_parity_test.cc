// embedding, rms_norm and silu_mul: CUDA against the CPU reference on the same (rounded)
// inputs (and feed_tokens, apply_token_bitmask and logit_bias, exact, at the end). The CPU writes
// f32 outputs where the op allows it, so each comparison sees the CUDA op's own rounding only:
// |cuda - cpu| <= atol + rtol * |cpu| with rtol = one rounding of the output dtype (bf16 1/128,
// f16 1/1024) and atol 1e-5.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

constexpr double kAtol = 1e-5;

class Elementwise : public ::testing::TestWithParam<DType> {};

TEST_P(Elementwise, EmbeddingGathersRows) {
  const DType dtype = GetParam();
  std::mt19937 rng(2);
  for (int64_t dim : {int64_t{8}, int64_t{100}, int64_t{4096}}) {
    Tensor table = random_tensor(dtype, {50, dim}, rng);
    Tensor ids = make_i32({6}, {3, 0, 49, 3, 17, 8});
    Tensor expected = zeros(DType::kF32, {6, dim});
    cpu_backend().embedding({table, ids, expected});
    Tensor table_d = to_device(table), ids_d = to_device(ids);
    // Same dtype (raw row copy) and converting to f32.
    Tensor same_d(cuda_backend().allocator(), dtype, {6, dim});
    Tensor f32_d(cuda_backend().allocator(), DType::kF32, {6, dim});
    cuda_backend().embedding({table_d, ids_d, same_d});
    cuda_backend().embedding({table_d, ids_d, f32_d});
    expect_close(host_doubles(same_d), to_doubles(expected), 0, 0, "embedding same dtype");
    expect_close(host_doubles(f32_d), to_doubles(expected), 0, 0, "embedding to f32");
  }
}

// x may be a strided view (every other row of a wider tensor); with a residual, residual is
// updated in place and must match the CPU's bit for bit (same fp32 add, same rounding).
void check_rms_norm(DType dtype, int64_t rows, int64_t dim, bool residual, bool strided_x) {
  std::mt19937 rng(3 + dim);
  Tensor x_wide = random_tensor(dtype, {rows, 2 * dim}, rng, -2, 2);
  TensorView x = strided_x ? x_wide.view().slice(1, 0, dim) : x_wide.view();
  Tensor x_dense = random_tensor(dtype, {rows, dim}, rng, -2, 2);
  if (!strided_x) x = x_dense;
  Tensor weight = random_tensor(dtype, {dim}, rng, 0.5, 1.5);
  Tensor res = random_tensor(dtype, {rows, dim}, rng, -2, 2);
  Tensor res_cpu = clone(res);
  Tensor expected = zeros(DType::kF32, {rows, dim});
  cpu_backend().rms_norm({x, residual ? res_cpu.view() : TensorView(), weight, expected, 1e-5f});

  Tensor x_d = to_device(strided_x ? x_wide.view() : x_dense.view());
  TensorView x_dv = strided_x ? x_d.view().slice(1, 0, dim) : x_d.view();
  Tensor weight_d = to_device(weight), res_d = to_device(res);
  Tensor out_d(cuda_backend().allocator(), dtype, {rows, dim});
  cuda_backend().rms_norm({x_dv, residual ? res_d.view() : TensorView(), weight_d, out_d, 1e-5f});
  const std::string what = "rms_norm " + dtype_str(dtype) + " [" + std::to_string(rows) + ", " +
                           std::to_string(dim) + "]" + (residual ? " +residual" : "") +
                           (strided_x ? " strided" : "");
  expect_close(host_doubles(out_d), to_doubles(expected), kAtol, output_rtol(dtype), what);
  if (residual) expect_close(host_doubles(res_d), to_doubles(res_cpu), 0, 0, what + " residual");
}

TEST_P(Elementwise, RmsNorm) {
  for (int64_t dim : {int64_t{8}, int64_t{100}, int64_t{4096}, int64_t{5120}, int64_t{8192}, int64_t{8200}}) {
    for (bool residual : {false, true}) {
      check_rms_norm(GetParam(), 7, dim, residual, false);
      check_rms_norm(GetParam(), 3, dim, residual, true);
      check_rms_norm(GetParam(), 80, dim, residual, false);  // past the decode rows' kernel
    }
  }
}

TEST_P(Elementwise, RmsNormOutAliasesX) {
  const DType dtype = GetParam();
  std::mt19937 rng(4);
  Tensor x = random_tensor(dtype, {5, 64}, rng);
  Tensor weight = random_tensor(dtype, {64}, rng);
  Tensor expected = zeros(DType::kF32, {5, 64});
  cpu_backend().rms_norm({x, {}, weight, expected, 1e-6f});
  Tensor x_d = to_device(x), weight_d = to_device(weight);
  cuda_backend().rms_norm({x_d, {}, weight_d, x_d, 1e-6f});
  expect_close(host_doubles(x_d), to_doubles(expected), kAtol, output_rtol(dtype), "rms_norm in place");
}

TEST_P(Elementwise, SiluMul) {
  const DType dtype = GetParam();
  std::mt19937 rng(5);
  for (int64_t dim : {int64_t{8}, int64_t{37}, int64_t{14336}}) {
    Tensor x = random_tensor(dtype, {3, 2 * dim}, rng, -6, 6);
    Tensor expected = zeros(DType::kF32, {3, dim});
    cpu_backend().silu_mul({x, expected});
    Tensor x_d = to_device(x);
    Tensor out_d(cuda_backend().allocator(), dtype, {3, dim});
    cuda_backend().silu_mul({x_d, out_d});
    expect_close(host_doubles(out_d), to_doubles(expected), kAtol, output_rtol(dtype),
                 "silu_mul dim " + std::to_string(dim));
  }
}

TEST(FeedTokens, CopiesSampledIdsIntoTheNextInputs) {
  // ids of a mixed step (a prefill chunk, then decodes); pairs name decode rows in any order and
  // one pair is skipped (dst -1). Both backends must give the same ids; the CUDA kernel also
  // skips pairs whose indices fall outside the tensors (the CPU reference rejects them).
  std::vector<int32_t> ids(1000), sampled(300);
  for (int32_t i = 0; i < 1000; ++i) ids[i] = 7 * i;
  for (int32_t i = 0; i < 300; ++i) sampled[i] = 100000 + i;
  std::vector<int32_t> dst, src;
  for (int32_t j = 0; j < 300; ++j) {
    dst.push_back(j == 17 ? -1 : 700 + j);
    src.push_back((j * 37) % 300);
  }
  auto view = [](std::vector<int32_t>& v) { return TensorView(v.data(), DType::kI32, {static_cast<int64_t>(v.size())}); };
  Tensor ids_d = to_device(view(ids)), dst_d = to_device(view(dst)), src_d = to_device(view(src));
  Tensor sampled_d = to_device(view(sampled));
  cpu_backend().feed_tokens({view(ids), view(dst), view(src), view(sampled)});
  cuda_backend().feed_tokens({ids_d, dst_d, src_d, sampled_d});
  Tensor back = to_host(ids_d);
  for (int32_t i = 0; i < 1000; ++i) ASSERT_EQ(back.data_as<int32_t>()[i], ids[i]) << "ids[" << i << "]";
  EXPECT_EQ(ids[717], 7 * 717);  // the skipped pair
  EXPECT_EQ(ids[718], 100000 + (18 * 37) % 300);

  std::vector<int32_t> bad_dst{5, 2000}, bad_src{400, 0};
  Tensor bad_dst_d = to_device(view(bad_dst)), bad_src_d = to_device(view(bad_src));
  cuda_backend().feed_tokens({ids_d, bad_dst_d, bad_src_d, sampled_d});
  Tensor unchanged = to_host(ids_d);
  for (int32_t i = 0; i < 1000; ++i) ASSERT_EQ(unchanged.data_as<int32_t>()[i], ids[i]) << "ids[" << i << "]";
  EXPECT_ERROR_CONTAINS(cpu_backend().feed_tokens({view(ids), view(bad_dst), view(bad_src), view(sampled)}),
                        "feed_tokens: pair 0 copies sampled[400] of 300");
}

TEST(TokenBitmask, MasksTheSameLogitsAsTheCpu) {
  // 200 rows of a 128256-token vocabulary (strided rows: room for 16 more columns), 37 of them
  // masked by random masks whose 4000 words cover part of the vocabulary only.
  const int64_t num_rows = 200, vocab = 128256, stride = vocab + 16, num_words = 4000;
  std::mt19937 rng(5);
  std::vector<float> logits(num_rows * stride);
  for (float& x : logits) x = std::uniform_real_distribution<float>(-4, 4)(rng);
  std::vector<int32_t> rows;
  for (int32_t r = 3; r < num_rows; r += 5) rows.push_back(r);
  std::vector<uint32_t> mask(rows.size() * num_words);
  for (uint32_t& w : mask) w = rng() & rng();  // about a quarter of the tokens allowed
  const std::array<int64_t, Shape::kMaxDims> strides{stride, 1};
  TensorView host_logits(logits.data(), DType::kF32, {num_rows, vocab}, strides, Device::kCpu);
  Tensor logits_d = to_device(TensorView(logits.data(), DType::kF32, {num_rows, stride}));
  const auto num_masked = static_cast<int64_t>(rows.size());
  TensorView rows_h(rows.data(), DType::kI32, {num_masked}), mask_h(mask.data(), DType::kU32, {num_masked, num_words});
  Tensor rows_d = to_device(rows_h), mask_d = to_device(mask_h);
  cpu_backend().apply_token_bitmask({.logits = host_logits, .bitmask = mask_h, .rows = rows_h});
  cuda_backend().apply_token_bitmask({.logits = TensorView(logits_d.data_as<void>(), DType::kF32, {num_rows, vocab}, strides,
                                                           Device::kCuda),
                                      .bitmask = mask_d, .rows = rows_d});
  Tensor back = to_host(logits_d);
  int64_t num_masked_logits = 0;
  for (int64_t i = 0; i < num_rows * stride; ++i) {
    ASSERT_EQ(back.data_as<float>()[i], logits[i]) << "row " << i / stride << " column " << i % stride;
    num_masked_logits += std::isinf(logits[i]);
  }
  EXPECT_GT(num_masked_logits, num_masked * vocab / 2);
}

// Rows sharing masks by index (equal masks sent once): the last rows take the first masks.
TEST(TokenBitmask, SharedMasksMaskTheSameLogitsAsTheCpu) {
  const int64_t num_rows = 64, vocab = 128256, num_words = vocab / 32, num_masks = 3;
  std::mt19937 rng(6);
  std::vector<float> logits(num_rows * vocab);
  for (float& x : logits) x = std::uniform_real_distribution<float>(-4, 4)(rng);
  std::vector<int32_t> rows, index;
  for (int32_t r = 1; r < num_rows; r += 2) {
    rows.push_back(r);
    index.push_back(r % num_masks);
  }
  std::vector<uint32_t> mask(num_masks * num_words);
  for (uint32_t& w : mask) w = rng() & rng();
  const auto num_masked = static_cast<int64_t>(rows.size());
  TensorView logits_h(logits.data(), DType::kF32, {num_rows, vocab});
  TensorView rows_h(rows.data(), DType::kI32, {num_masked}), index_h(index.data(), DType::kI32, {num_masked});
  TensorView mask_h(mask.data(), DType::kU32, {num_masks, num_words});
  Tensor logits_d = to_device(logits_h), rows_d = to_device(rows_h), index_d = to_device(index_h),
         mask_d = to_device(mask_h);
  cpu_backend().apply_token_bitmask({.logits = logits_h, .bitmask = mask_h, .rows = rows_h, .mask_index = index_h});
  cuda_backend().apply_token_bitmask({.logits = logits_d, .bitmask = mask_d, .rows = rows_d, .mask_index = index_d});
  Tensor back = to_host(logits_d);
  for (int64_t i = 0; i < num_rows * vocab; ++i)
    ASSERT_EQ(back.data_as<float>()[i], logits[i]) << "row " << i / vocab << " column " << i % vocab;
}

// 300 biases over 40 of 200 strided rows of a 128256-token vocabulary, the CPU's exact sums.
TEST(LogitBias, AddsTheSameValuesAsTheCpu) {
  const int64_t num_rows = 200, vocab = 128256, stride = vocab + 16;
  std::mt19937 rng(7);
  std::vector<float> logits(num_rows * stride);
  for (float& x : logits) x = std::uniform_real_distribution<float>(-4, 4)(rng);
  std::vector<int32_t> rows, tokens;
  std::vector<float> values;
  for (int32_t r = 2; r < num_rows; r += 5) {
    std::set<int32_t> seen;
    while (seen.size() < 7 + r % 3) seen.insert(static_cast<int32_t>(rng() % vocab));
    for (int32_t t : seen) {
      rows.push_back(r);
      tokens.push_back(t);
      values.push_back(std::uniform_real_distribution<float>(-100, 100)(rng));
    }
  }
  const auto n = static_cast<int64_t>(rows.size());
  const std::array<int64_t, Shape::kMaxDims> strides{stride, 1};
  TensorView rows_h(rows.data(), DType::kI32, {n}), tokens_h(tokens.data(), DType::kI32, {n});
  TensorView values_h(values.data(), DType::kF32, {n});
  Tensor logits_d = to_device(TensorView(logits.data(), DType::kF32, {num_rows, stride}));
  Tensor rows_d = to_device(rows_h), tokens_d = to_device(tokens_h), values_d = to_device(values_h);
  cpu_backend().logit_bias({.logits = TensorView(logits.data(), DType::kF32, {num_rows, vocab}, strides, Device::kCpu),
                            .rows = rows_h, .tokens = tokens_h, .values = values_h});
  cuda_backend().logit_bias({.logits = TensorView(logits_d.data_as<void>(), DType::kF32, {num_rows, vocab}, strides,
                                                  Device::kCuda),
                             .rows = rows_d, .tokens = tokens_d, .values = values_d});
  Tensor back = to_host(logits_d);
  for (int64_t i = 0; i < num_rows * stride; ++i)
    ASSERT_EQ(back.data_as<float>()[i], logits[i]) << "row " << i / stride << " column " << i % stride;
  EXPECT_GE(n, 300);
}

INSTANTIATE_TEST_SUITE_P(DTypes, Elementwise, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return dtype_str(info.param); });

TEST(ElementwisePerf, Llama8B) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  for (int64_t tokens : {int64_t{1}, int64_t{8}, int64_t{64}, int64_t{168}, int64_t{512}, int64_t{4096}}) {
    const std::string t = std::to_string(tokens);
    Tensor x(alloc, DType::kBF16, {tokens, 4096}), res(alloc, DType::kBF16, {tokens, 4096});
    Tensor out(alloc, DType::kBF16, {tokens, 4096}), w(alloc, DType::kBF16, {4096});
    report_perf("rms_norm+res", "bf16 [" + t + ", 4096]", tokens * 4096 * 2.0 * 4, 0,
                [&] { cuda_backend().rms_norm({x, res, w, out, 1e-5f}); });
    Tensor gate_up(alloc, DType::kBF16, {tokens, 2 * 14336}), act(alloc, DType::kBF16, {tokens, 14336});
    report_perf("silu_mul", "bf16 [" + t + ", 14336]", tokens * 14336 * 2.0 * 3, 0,
                [&] { cuda_backend().silu_mul({gate_up, act}); });
    Tensor table(alloc, DType::kBF16, {128256, 4096});
    std::vector<int32_t> ids(tokens);
    for (int64_t i = 0; i < tokens; ++i) ids[i] = static_cast<int32_t>((i * 7919) % 128256);
    Tensor ids_d = to_device(TensorView(ids.data(), DType::kI32, {tokens}));
    report_perf("embedding", "bf16 table [128256, 4096] x " + t, tokens * 4096 * 2.0 * 2, 0,
                [&] { cuda_backend().embedding({table, ids_d, out}); });
  }
}

}  // namespace
}  // namespace brisk::testing
