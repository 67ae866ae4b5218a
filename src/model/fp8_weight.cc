#include "model/fp8_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/host_convert.h"
#include "core/parallel.h"

namespace brisk {
namespace {

int64_t blocks(int64_t size) { return (size + kFp8BlockSize - 1) / kFp8BlockSize; }

bool is_scale_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

// A per-tensor scale: shape [] or [1].
bool is_scalar(const TensorView& t) { return t.num_elements() == 1 && t.rank() <= 1; }

}  // namespace

float fp8_tensor_scale(const TensorView& t, const std::string& name) {
  if (!is_scale_dtype(t.dtype()) || !is_scalar(t))
    throw_error(ErrorCode::kInvalidArgument, "{} is {} but must be one f32, f16 or bf16 value", name, t.describe());
  const float scale = load_float(t, 0);
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw_error(ErrorCode::kInvalidArgument, "{} is {}; it must be positive and finite", name, scale);
  return scale;
}

Fp8Weight from_fp8_checkpoint(const Fp8Tensors& t, const QuantizationConfig& config, const std::string& name) {
  if (t.weight.dtype() != DType::kF8E4M3 || t.weight.rank() != 2)
    throw_error(ErrorCode::kUnsupported, "{}.weight is {} but an FP8 checkpoint's weights must be f8e4m3 [out, in]",
                name, t.weight.describe());
  const int64_t n = t.weight.size(0), k = t.weight.size(1);
  const TensorView s = t.weight_scale;
  if (!is_scale_dtype(s.dtype()))
    throw_error(ErrorCode::kInvalidArgument, "{}: weight scale is {} but must be f32, f16 or bf16", name, s.describe());
  Fp8Weight w;
  w.weight = Tensor(cpu_allocator(), DType::kF8E4M3, {n, k});
  std::memcpy(w.weight.view().data(), t.weight.data(), t.weight.num_bytes());
  switch (config.fp8_weights) {
    case Fp8WeightScales::kTensor: {
      if (!is_scalar(s))
        throw_error(ErrorCode::kInvalidArgument, "{}: weight scale is {} but a per-tensor scale is [1]", name, s.describe());
      w.weight_scale = Tensor(cpu_allocator(), DType::kF32, {n, 1});
      std::fill_n(w.weight_scale.data_as<float>(), n, load_float(s, 0));
      break;
    }
    case Fp8WeightScales::kChannel: {
      if (s.num_elements() != n || !(s.shape() == Shape{n, 1} || s.shape() == Shape{n}))
        throw_error(ErrorCode::kInvalidArgument, "{}: weight scale is {} but a per-channel scale is [{}, 1]", name,
                    s.describe(), n);
      w.weight_scale = Tensor(cpu_allocator(), DType::kF32, {n, 1});
      for (int64_t i = 0; i < n; ++i) w.weight_scale.data_as<float>()[i] = load_float(s, i);
      break;
    }
    case Fp8WeightScales::kBlock: {
      const Shape expected{blocks(n), blocks(k)};
      if (s.shape() != expected)
        throw_error(ErrorCode::kInvalidArgument, "{}: weight scale is {} but [{}, {}] 128x128 block scales are {}", name,
                    s.describe(), n, k, expected.to_string());
      w.block_size = kFp8BlockSize;
      w.row_blocks = true;
      w.weight_scale = Tensor(cpu_allocator(), DType::kF32, {n, blocks(k)});
      for (int64_t r = 0; r < n; ++r)
        for (int64_t b = 0; b < blocks(k); ++b)
          w.weight_scale.data_as<float>()[r * blocks(k) + b] = load_float(s, (r / kFp8BlockSize) * blocks(k) + b);
      break;
    }
  }
  for (int64_t i = 0; i < w.weight_scale.view().num_elements(); ++i) {
    const float v = w.weight_scale.data_as<float>()[i];
    if (!(v > 0.0f) || !std::isfinite(v))
      throw_error(ErrorCode::kInvalidArgument, "{}: weight scale {} is {}; scales must be positive and finite", name, i, v);
  }
  if (config.fp8_activations == Fp8Activations::kStatic) {
    if (t.input_scale.empty())
      throw_error(ErrorCode::kNotFound, "{}.input_scale is missing: the checkpoint's activations are statically scaled",
                  name);
    w.input_scale = fp8_tensor_scale(t.input_scale, name + ".input_scale");
  }
  return w;
}

Fp8Weight concat_rows(const std::vector<Fp8Rows>& parts) {
  BRISK_CHECK(!parts.empty(), "concat_rows: no parts");
  const Fp8Weight& first = *parts.front().weight;
  const int64_t k = first.in_features(), groups = first.weight_scale.shape()[1];
  int64_t n = 0;
  Fp8Weight out;
  out.block_size = first.block_size;
  out.row_blocks = true;
  for (const Fp8Rows& p : parts) {
    const Fp8Weight& w = *p.weight;
    BRISK_CHECK(w.in_features() == k && w.block_size == first.block_size && (w.input_scale > 0) == (first.input_scale > 0),
                "concat_rows: FP8 parts differ in in_features, block size or activation scaling");
    BRISK_CHECK(p.begin >= 0 && p.count >= 0 && p.begin + p.count <= w.out_features(),
                "concat_rows: rows [{}, {}) of a weight with {} rows", p.begin, p.begin + p.count, w.out_features());
    n += p.count;
    out.input_scale = std::max(out.input_scale, w.input_scale);
    // Rows stay in 128-row blocks where every part starts a block and all but the last fill theirs.
    out.row_blocks = out.row_blocks && w.row_blocks && p.begin % kFp8BlockSize == 0 &&
                     (p.count % kFp8BlockSize == 0 || &p == &parts.back());
  }
  out.weight = Tensor(cpu_allocator(), DType::kF8E4M3, {n, k});
  out.weight_scale = Tensor(cpu_allocator(), DType::kF32, {n, groups});
  int64_t row = 0;
  for (const Fp8Rows& p : parts) {
    std::memcpy(out.weight.data_as<uint8_t>() + row * k, p.weight->weight.data_as<const uint8_t>() + p.begin * k,
                static_cast<size_t>(p.count * k));
    std::memcpy(out.weight_scale.data_as<float>() + row * groups,
                p.weight->weight_scale.data_as<const float>() + p.begin * groups, sizeof(float) * p.count * groups);
    row += p.count;
  }
  return out;
}

Fp8Weight quantize_fp8(TensorView weight) {
  BRISK_CHECK(weight.rank() == 2, "quantize_fp8: weight is {} but must be [out, in]", weight.describe());
  const int64_t n = weight.size(0), k = weight.size(1);
  Fp8Weight w;
  w.weight = Tensor(cpu_allocator(), DType::kF8E4M3, {n, k});
  w.weight_scale = Tensor(cpu_allocator(), DType::kF32, {n, 1});
  parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(k);
    for (int64_t r = begin; r < end; ++r) {
      float amax = 0.0f;
      for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(row[i] = load_float(weight, r * k + i)));
      const float scale = amax > 0.0f ? amax / kE4M3Max : 1.0f;
      w.weight_scale.data_as<float>()[r] = scale;
      for (int64_t i = 0; i < k; ++i) w.weight.data_as<uint8_t>()[r * k + i] = float_to_e4m3(row[i] / scale);
    }
  });
  return w;
}

Tensor dequantize(const Fp8Weight& w) {
  const int64_t n = w.out_features(), k = w.in_features(), groups = w.weight_scale.shape()[1];
  Tensor out(cpu_allocator(), DType::kF32, {n, k});
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < k; ++i)
      out.data_as<float>()[r * k + i] = e4m3_to_float(w.weight.data_as<const uint8_t>()[r * k + i]) *
                                        w.weight_scale.data_as<const float>()[r * groups + (w.block_size ? i / w.block_size : 0)];
  return out;
}

Fp8Weight slice_columns(const Fp8Weight& w, int64_t begin, int64_t count) {
  Fp8Weight out;
  out.block_size = w.block_size;
  out.row_blocks = w.row_blocks;
  out.input_scale = w.input_scale;
  out.weight = copy_columns(w.weight, begin, count);
  if (w.block_size == 0) {
    out.weight_scale = copy_columns(w.weight_scale, 0, 1);
    return out;
  }
  BRISK_CHECK(begin % w.block_size == 0 && (count % w.block_size == 0 || begin + count == w.in_features()),
              "slice_columns: columns [{}, {}) are not whole FP8 blocks of {}", begin, begin + count, w.block_size);
  const int64_t first = begin / w.block_size, groups = (count + w.block_size - 1) / w.block_size;
  out.weight_scale = copy_columns(w.weight_scale, first, groups);
  return out;
}

}  // namespace brisk
