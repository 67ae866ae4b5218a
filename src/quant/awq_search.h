// The math of AWQ (activation-aware weight quantization, Lin et al. 2023): per scaling group
// (linear layers that read the same input), the per-input-channel scales s that minimise the
// output error of the int4 weights, and the per-group clipping of the scaled weights.
//
// Quantizing W * diag(s) and feeding it x / s computes x * W^T exactly before quantization; after
// it, channels with large activations get finer steps. s = mean|x|^alpha / sqrt(max * min) of
// that, alpha on a grid over [0, 1) (alpha 0: s = 1, plain round to nearest), and the search
// keeps the alpha of the lowest squared error of the group's outputs on calibration rows. (AutoAWQ's
// "duo" scales, mean|x|^alpha / mean|w|^(1 - alpha), were tried: on models/tiny-austen they fit
// the calibration rows slightly better and held-out text worse, at twice the cost.) The
// quantizer (quant/model_quantizer.cc) folds 1 / s into the op before the group.
//
// Unlike AutoAWQ, which measures the error at the output of the whole attention or MLP block, the
// loss here is the error of the group's own linear outputs: it needs no second implementation of
// the forward, only the input rows the model's observer hook captured (quant/activation_sampler.h).
//
// Quantization here is model/int4_weight.h's quantize_rtn exactly (asymmetric, f16 scales):
// fake_quantize equals dequantize(quantize_rtn(...)).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace brisk {

// Calibration input rows of one linear input: a subsample of rows for losses, and the mean |x|
// of every channel over all rows seen.
struct ActivationRows {
  std::vector<float> rows;      // [num_rows, num_cols]
  std::vector<float> mean_abs;  // [num_cols]
  int64_t num_rows = 0;
  int64_t num_cols = 0;
};

inline constexpr int kAwqGridPoints = 20;

struct ScaleSearchResult {
  std::vector<float> scales;  // [in_features]; all 1 when alpha is 0
  float alpha = 0;
  double loss = 0;      // squared output error over the rows with the chosen scales
  double rtn_loss = 0;  // the same without scales (alpha 0)
};

// Searches the scales of the weights that read x (each f32 [N_i, K], K = x.num_cols).
ScaleSearchResult search_scales(const std::vector<const Tensor*>& weights, const ActivationRows& x,
                                int64_t group_size);

// AWQ's clipping search on a (scaled) weight f32 [N, K] read by rows of x (already divided by
// the scales): per output row and group, the clip threshold among max|w| * (1 - i / 20),
// i < 10, of the lowest squared error of the group's partial outputs; clamps weight in place.
// Returns the summed error (before, after) over all groups.
std::pair<double, double> search_clip(Tensor& weight, const ActivationRows& x, int64_t group_size);

// w (f32 [N, K]) quantized per group and dequantized, as f32 [N, K].
Tensor fake_quantize(const Tensor& w, int64_t group_size);

// The squared output error of a weight error d (f32 [N, K]) on the rows of x: the sum over rows m
// and outputs n of (x_m . d_n)^2; through x's Gram matrix (made once) when x has more rows than
// columns, which costs N * K^2 instead of N * K * rows. x must outlive this object.
class OutputError {
 public:
  explicit OutputError(const ActivationRows& x);
  double operator()(const Tensor& d) const;

 private:
  const ActivationRows& x_;
  std::vector<float> gram_;  // [K, K] or empty
};

// x^T x, f32 [K, K].
std::vector<float> gram_matrix(const ActivationRows& x);

}  // namespace brisk
