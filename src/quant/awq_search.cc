#include "quant/awq_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk {
namespace {

// Rows of x the clipping search uses (AutoAWQ uses 512 tokens too): its cost grows with them.
constexpr int64_t kClipRows = 512;
// Clip thresholds tried: max|w| * (1 - i / kAwqGridPoints) for i < kClipSteps (shrink up to 50%).
constexpr int kClipSteps = kAwqGridPoints / 2;

float dot(const float* a, const float* b, int64_t n) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) partial[j] += a[k + j] * b[k + j];
  }
  for (int j = 0; k < n; ++k, ++j) partial[j] += a[k] * b[k];
  return ((partial[0] + partial[4]) + (partial[1] + partial[5])) + ((partial[2] + partial[6]) + (partial[3] + partial[7]));
}

// One group of `count` values quantized and dequantized into out, with quantize_rtn's arithmetic.
void fake_quantize_group(const float* values, int64_t count, float* out) {
  const auto [lo, hi] = std::minmax_element(values, values + count);
  const float scale = half_to_float(float_to_half(std::max(*hi - *lo, 1e-5f) / 15.0f));
  const float zero = std::clamp(-std::nearbyint(*lo / scale), 0.0f, 15.0f);
  for (int64_t i = 0; i < count; ++i) {
    const float q = std::clamp(std::nearbyint(values[i] / scale) + zero, 0.0f, 15.0f);
    out[i] = (q - zero) * scale;
  }
}

void check_weight(const Tensor& w, int64_t k, int64_t group_size, const char* what) {
  BRISK_CHECK(w.dtype() == DType::kF32 && w.shape().rank() == 2 && w.shape()[1] == k,
              "{}: weight is {} but must be f32 [N, {}] (the calibration rows' width)", what, w.view().describe(), k);
  BRISK_CHECK(group_size > 0 && k % group_size == 0, "{}: in_features {} is not a multiple of the group size {}",
              what, k, group_size);
}

// The scales of one alpha: mean_abs^alpha (at least 1e-4), divided by sqrt(max * min).
std::vector<float> scales_for(const std::vector<float>& mean_abs, float alpha) {
  std::vector<float> s(mean_abs.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = std::max(std::pow(std::max(mean_abs[i], 0.0f), alpha), 1e-4f);
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  const float norm = std::sqrt(*lo * *hi);
  for (float& v : s) v /= norm;
  return s;
}

// Output error of w quantized with scales s: (Q(w * s) / s - w) against x.
double scaled_error(const Tensor& w, const std::vector<float>& s, const OutputError& error, int64_t group_size) {
  const int64_t n = w.shape()[0], k = w.shape()[1];
  Tensor scaled(cpu_allocator(), DType::kF32, {n, k});
  const float* src = w.data_as<float>();
  float* dst = scaled.data_as<float>();
  for (int64_t i = 0; i < n * k; ++i) dst[i] = src[i] * s[i % k];
  Tensor deq = fake_quantize(scaled, group_size);
  float* d = deq.data_as<float>();
  for (int64_t i = 0; i < n * k; ++i) d[i] = d[i] / s[i % k] - src[i];
  return error(deq);
}

// sum over m, n of (a_m . d_n)^2 for the rows a [num_rows, K]: blocks of d's rows stay in cache
// while a streams by.
double output_error(const float* a, int64_t num_rows, const Tensor& d) {
  const int64_t n = d.shape()[0], k = d.shape()[1];
  constexpr int64_t kBlock = 8;
  const int64_t num_blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(num_blocks, 0.0);
  parallel_for(num_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * kBlock, count = std::min(kBlock, n - n0);
      double sum = 0;
      for (int64_t m = 0; m < num_rows; ++m) {
        const float* row = a + m * k;
        for (int64_t j = 0; j < count; ++j) {
          const double e = dot(row, d.data_as<float>() + (n0 + j) * k, k);
          sum += e * e;
        }
      }
      partial[b] = sum;
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

// sum over n of d_n^T gram d_n: the same error as above with gram = x^T x, cheaper when x has
// more rows than columns.
double output_error(const std::vector<float>& gram, const Tensor& d) {
  const int64_t n = d.shape()[0], k = d.shape()[1];
  std::vector<double> partial(n, 0.0);
  parallel_for(n, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = d.data_as<float>() + r * k;
      double sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += static_cast<double>(row[i]) * dot(gram.data() + i * k, row, k);
      partial[r] = sum;
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace

std::vector<float> gram_matrix(const ActivationRows& x) {
  const int64_t k = x.num_cols;
  constexpr int64_t kBlock = 8;  // rows of the result per task: they stay in cache while x streams by
  std::vector<float> gram(k * k, 0.0f);
  parallel_for((k + kBlock - 1) / kBlock, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t i0 = b * kBlock, count = std::min(kBlock, k - i0);
      for (int64_t m = 0; m < x.num_rows; ++m) {
        const float* row = x.rows.data() + m * k;
        for (int64_t i = i0; i < i0 + count; ++i) {
          float* acc = gram.data() + i * k;
          const float xi = row[i];
          for (int64_t j = 0; j < k; ++j) acc[j] += xi * row[j];
        }
      }
    }
  });
  return gram;
}

Tensor fake_quantize(const Tensor& w, int64_t group_size) {
  const int64_t n = w.shape()[0], k = w.shape()[1];
  check_weight(w, k, group_size, "fake_quantize");
  Tensor out(cpu_allocator(), DType::kF32, {n, k});
  parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t g = 0; g < k; g += group_size)
        fake_quantize_group(w.data_as<float>() + r * k + g, group_size, out.data_as<float>() + r * k + g);
  });
  return out;
}

OutputError::OutputError(const ActivationRows& x) : x_(x) {
  if (x.num_rows > x.num_cols) gram_ = gram_matrix(x);
}

double OutputError::operator()(const Tensor& d) const {
  BRISK_CHECK(d.dtype() == DType::kF32 && d.shape()[1] == x_.num_cols,
              "output_error: {} does not match rows of width {}", d.view().describe(), x_.num_cols);
  return gram_.empty() ? output_error(x_.rows.data(), x_.num_rows, d) : output_error(gram_, d);
}

ScaleSearchResult search_scales(const std::vector<const Tensor*>& weights, const ActivationRows& x,
                                int64_t group_size) {
  BRISK_CHECK(!weights.empty() && x.num_rows > 0 && static_cast<int64_t>(x.mean_abs.size()) == x.num_cols,
              "search_scales: needs weights and calibration rows (got {} weights, {} rows)", weights.size(),
              x.num_rows);
  for (const Tensor* w : weights) check_weight(*w, x.num_cols, group_size, "search_scales");
  const OutputError error(x);
  ScaleSearchResult best;
  best.loss = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kAwqGridPoints; ++i) {
    const float alpha = static_cast<float>(i) / kAwqGridPoints;
    std::vector<float> s = i == 0 ? std::vector<float>(x.num_cols, 1.0f) : scales_for(x.mean_abs, alpha);
    double loss = 0;
    for (const Tensor* w : weights) loss += scaled_error(*w, s, error, group_size);
    if (i == 0) best.rtn_loss = loss;
    if (loss < best.loss) {
      best.loss = loss;
      best.alpha = alpha;
      best.scales = std::move(s);
    }
  }
  return best;
}

std::pair<double, double> search_clip(Tensor& weight, const ActivationRows& x, int64_t group_size) {
  const int64_t n = weight.shape()[0], k = weight.shape()[1];
  check_weight(weight, x.num_cols, group_size, "search_clip");
  const int64_t num_groups = k / group_size, num_rows = std::min(x.num_rows, kClipRows);
  // gram[g] = x_g^T x_g over the rows: the error of a group's weight error e is e^T gram[g] e.
  std::vector<float> gram(num_groups * group_size * group_size, 0.0f);
  parallel_for(num_groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      float* out = gram.data() + g * group_size * group_size;
      for (int64_t m = 0; m < num_rows; ++m) {
        const float* row = x.rows.data() + m * k + g * group_size;
        for (int64_t i = 0; i < group_size; ++i)
          for (int64_t j = 0; j < group_size; ++j) out[i * group_size + j] += row[i] * row[j];
      }
    }
  });
  std::vector<double> before(n, 0.0), after(n, 0.0);
  parallel_for(n, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> clamped(group_size), deq(group_size), err(group_size);
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t g = 0; g < num_groups; ++g) {
        float* w = weight.data_as<float>() + r * k + g * group_size;
        const float* gram_g = gram.data() + g * group_size * group_size;
        float org_max = 0;
        for (int64_t i = 0; i < group_size; ++i) org_max = std::max(org_max, std::fabs(w[i]));
        double best_error = std::numeric_limits<double>::infinity();
        float best_max = org_max;
        for (int step = 0; step < kClipSteps; ++step) {
          const float max_val = org_max * (1.0f - static_cast<float>(step) / kAwqGridPoints);
          for (int64_t i = 0; i < group_size; ++i) clamped[i] = std::clamp(w[i], -max_val, max_val);
          fake_quantize_group(clamped.data(), group_size, deq.data());
          for (int64_t i = 0; i < group_size; ++i) err[i] = deq[i] - w[i];
          double e = 0;
          for (int64_t i = 0; i < group_size; ++i) e += err[i] * dot(gram_g + i * group_size, err.data(), group_size);
          if (step == 0) before[r] += e;
          if (e < best_error) {
            best_error = e;
            best_max = max_val;
          }
        }
        after[r] += best_error;
        for (int64_t i = 0; i < group_size; ++i) w[i] = std::clamp(w[i], -best_max, best_max);
      }
    }
  });
  double total_before = 0, total_after = 0;
  for (int64_t r = 0; r < n; ++r) {
    total_before += before[r];
    total_after += after[r];
  }
  return {total_before, total_after};
}

}  // namespace brisk
