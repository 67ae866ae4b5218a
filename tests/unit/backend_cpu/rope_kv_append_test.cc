#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::make_i32;
using testing::random_tensor;
using testing::to_doubles;

constexpr double kSentinel = 7.0;  // pre-filled cache value: slots not written must keep it

// A standard RoPE table (theta 10000): row p = [cos(p * f_i) | sin(p * f_i)].
Tensor make_cos_sin(int64_t num_positions, int64_t head_dim) {
  std::vector<double> values;
  for (int64_t pos = 0; pos < num_positions; ++pos) {
    std::vector<double> cos, sin;
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      double freq = std::pow(10000.0, -2.0 * i / head_dim);
      cos.push_back(std::cos(pos * freq));
      sin.push_back(std::sin(pos * freq));
    }
    values.insert(values.end(), cos.begin(), cos.end());
    values.insert(values.end(), sin.begin(), sin.end());
  }
  return testing::make_tensor(DType::kF32, {num_positions, head_dim}, values);
}

// One head, in place: optional RMSNorm, then rotate-half with the table row at its position.
void reference_head(double* head, const double* norm, double eps, const double* cos_sin,
                    int64_t head_dim) {
  if (norm != nullptr) {
    double sum = 0;
    for (int64_t i = 0; i < head_dim; ++i) sum += head[i] * head[i];
    double inv = 1.0 / std::sqrt(sum / head_dim + eps);
    for (int64_t i = 0; i < head_dim; ++i) head[i] = head[i] * inv * norm[i];
  }
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    double x1 = head[i], x2 = head[i + half], c = cos_sin[i], s = cos_sin[half + i];
    head[i] = x1 * c - x2 * s;
    head[i + half] = x2 * c + x1 * s;
  }
}

struct RopeCase {
  int64_t head_dim;
  DType qkv_dtype;
  DType cache_dtype;
  bool with_norm;
};

void check_rope(const RopeCase& c, std::mt19937& rng) {
  auto backend = make_cpu_backend();
  const int64_t num_heads = 4, num_kv_heads = 2, num_tokens = 6, head_dim = c.head_dim;
  const int64_t num_blocks = 4, block_size = 4, num_positions = 40;
  const int64_t width = (num_heads + 2 * num_kv_heads) * head_dim;
  Tensor qkv = random_tensor(c.qkv_dtype, {num_tokens, width}, rng, -2.0, 2.0);
  const std::vector<int32_t> positions = {0, 39, 5, 17, 17, 2};
  const std::vector<int32_t> slots = {3, -1, 15, 4, 8, -5};
  Tensor cos_sin = make_cos_sin(num_positions, head_dim);
  Tensor q_norm = c.with_norm ? random_tensor(DType::kBF16, {head_dim}, rng, 0.5, 1.5) : Tensor();
  Tensor k_norm = c.with_norm ? random_tensor(DType::kF32, {head_dim}, rng, 0.5, 1.5) : Tensor();
  const Shape cache_shape = {num_blocks, num_kv_heads, block_size, head_dim};
  std::vector<double> sentinel(cache_shape.num_elements(), kSentinel);
  Tensor k_cache = testing::make_tensor(c.cache_dtype, cache_shape, sentinel);
  Tensor v_cache = testing::make_tensor(c.cache_dtype, cache_shape, sentinel);

  // Reference in double.
  std::vector<double> expected = to_doubles(qkv);
  std::vector<double> table = to_doubles(cos_sin);
  std::vector<double> qn = c.with_norm ? to_doubles(q_norm) : std::vector<double>();
  std::vector<double> kn = c.with_norm ? to_doubles(k_norm) : std::vector<double>();
  std::vector<double> expected_k = sentinel, expected_v = sentinel;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t h = 0; h < num_heads + num_kv_heads; ++h) {
      const std::vector<double>& norm = h < num_heads ? qn : kn;
      reference_head(&expected[t * width + h * head_dim], c.with_norm ? norm.data() : nullptr,
                     1e-6, &table[positions[t] * head_dim], head_dim);
    }
    if (slots[t] < 0) continue;
    for (int64_t g = 0; g < num_kv_heads; ++g) {
      int64_t block = slots[t] / block_size, offset = slots[t] % block_size;
      int64_t base = ((block * num_kv_heads + g) * block_size + offset) * head_dim;
      for (int64_t d = 0; d < head_dim; ++d) {
        expected_k[base + d] = expected[t * width + (num_heads + g) * head_dim + d];
        expected_v[base + d] = expected[t * width + (num_heads + num_kv_heads + g) * head_dim + d];
      }
    }
  }

  backend->rope_kv_append({.qkv = qkv, .positions = make_i32({num_tokens}, positions),
                           .cos_sin = cos_sin, .q_norm = q_norm.view(), .k_norm = k_norm.view(),
                           .norm_eps = 1e-6f, .num_heads = num_heads,
                           .num_kv_heads = num_kv_heads, .head_dim = static_cast<int>(head_dim),
                           .slot_mapping = make_i32({num_tokens}, slots), .k_cache = k_cache,
                           .v_cache = v_cache});
  std::string what = "rope head_dim " + std::to_string(head_dim) + " qkv " +
                     testing::dtype_str(c.qkv_dtype) + " cache " +
                     testing::dtype_str(c.cache_dtype) + (c.with_norm ? " q/k norm" : "");
  // Values are O(1) (O(3) after the norm): fp32 math, then one rounding to the stored dtype.
  testing::expect_close(to_doubles(qkv), expected, 1e-5, testing::rounding_tolerance(c.qkv_dtype),
                        what + " (qkv)");
  testing::expect_close(to_doubles(k_cache), expected_k, 1e-5,
                        testing::rounding_tolerance(c.cache_dtype), what + " (k_cache)");
  testing::expect_close(to_doubles(v_cache), expected_v, 1e-5,
                        testing::rounding_tolerance(c.cache_dtype), what + " (v_cache)");
}

TEST(CpuRopeKvAppend, MatchesDoubleReference) {
  std::mt19937 rng(31);
  for (int64_t head_dim : {64, 128}) {
    for (bool with_norm : {false, true}) {
      check_rope({head_dim, DType::kF32, DType::kF32, with_norm}, rng);
      check_rope({head_dim, DType::kBF16, DType::kBF16, with_norm}, rng);
      check_rope({head_dim, DType::kBF16, DType::kF32, with_norm}, rng);
      check_rope({head_dim, DType::kF32, DType::kF16, with_norm}, rng);
    }
  }
}

TEST(CpuRopeKvAppend, RejectsBadParams) {
  auto backend = make_cpu_backend();
  const int head_dim = 8;
  Tensor qkv(cpu_allocator(), DType::kF32, {2, 4 * head_dim});
  Tensor cos_sin = make_cos_sin(10, head_dim);
  Tensor cache(cpu_allocator(), DType::kF32, {2, 1, 4, head_dim});
  Tensor cache2(cpu_allocator(), DType::kF32, {2, 1, 4, head_dim});
  RopeKvAppendParams p{.qkv = qkv, .cos_sin = cos_sin, .num_heads = 2, .num_kv_heads = 1,
                       .head_dim = head_dim, .k_cache = cache, .v_cache = cache2};
  Tensor positions = make_i32({2}, {0, 10});
  Tensor slots = make_i32({2}, {0, 7});
  p.positions = positions;
  p.slot_mapping = slots;
  EXPECT_ERROR_CONTAINS(backend->rope_kv_append(p),
                        "positions[1] = 10 is outside the 10 rows of cos_sin");
  Tensor good_positions = make_i32({2}, {0, 9});
  Tensor bad_slots = make_i32({2}, {0, 8});
  p.positions = good_positions;
  p.slot_mapping = bad_slots;
  EXPECT_ERROR_CONTAINS(backend->rope_kv_append(p), "slot_mapping[1] = 8 but the cache");
  p.slot_mapping = slots;
  p.num_kv_heads = 2;
  EXPECT_ERROR_CONTAINS(backend->rope_kv_append(p), "qkv is f32[2, 32] (cpu) but (num_heads 2");
  p.num_kv_heads = 1;
  Tensor bf16_table(cpu_allocator(), DType::kBF16, {10, head_dim});
  p.cos_sin = bf16_table;
  EXPECT_ERROR_CONTAINS(backend->rope_kv_append(p), "cos_sin is bf16[10, 8] (cpu) but must be f32");
  p.cos_sin = cos_sin;
  Tensor short_norm(cpu_allocator(), DType::kF32, {head_dim - 1});
  p.k_norm = short_norm;
  EXPECT_ERROR_CONTAINS(backend->rope_kv_append(p), "k_norm is f32[7] (cpu) but head_dim is 8");
  p.k_norm = {};
  p.head_dim = 7;
  EXPECT_ERROR_CONTAINS(backend->rope_kv_append(p), "head_dim is 7 but must be positive and even");
  p.head_dim = head_dim;
  backend->rope_kv_append(p);  // the fixed params run
}

}  // namespace
}  // namespace brisk
