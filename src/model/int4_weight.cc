#include "model/int4_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/host_convert.h"
#include "core/parallel.h"

namespace brisk {
namespace {

uint32_t word_at(const TensorView& t, int64_t row, int64_t col) {
  uint32_t word;
  std::memcpy(&word, static_cast<const char*>(t.data()) + 4 * (row * t.size(1) + col), 4);
  return word;
}

void set_quant(Tensor& qweight, int64_t n, int64_t k, int q) {
  uint8_t& byte = qweight.data_as<uint8_t>()[(n * qweight.shape()[1] + k) / 2];
  const int shift = 4 * static_cast<int>(k % 2);
  byte = static_cast<uint8_t>((byte & ~(0xF << shift)) | ((q & 0xF) << shift));
}

void check_tensor(const TensorView& t, const std::string& layer, const char* tensor, DType dtype,
                  const Shape& shape) {
  if (t.dtype() != dtype || t.shape() != shape)
    throw_error(ErrorCode::kInvalidArgument, "{}.{} is {} but {}{} is expected", layer, tensor,
                t.describe(), dtype_name(dtype), shape.to_string());
}

void check_scales(const TensorView& t, const std::string& layer, const Shape& shape) {
  if (!is_floating(t.dtype()) || dtype_bits(t.dtype()) < 16 || t.shape() != shape)
    throw_error(ErrorCode::kInvalidArgument, "{}.scales is {} but f16, bf16 or f32 {} is expected", layer,
                t.describe(), shape.to_string());
}

void check_group(int64_t k, int64_t group_size, const std::string& layer) {
  if (group_size <= 0 || k % group_size != 0 || k % 8 != 0)
    throw_error(ErrorCode::kInvalidArgument,
                "{}: in_features {} must be a multiple of 8 and of the group size {}", layer, k, group_size);
}

// An empty weight of the given shape: qweight zeroed, scales in scale_dtype, zeros if asked.
Int4Weight empty_weight(int64_t n, int64_t k, int64_t group_size, DType scale_dtype, bool with_zeros) {
  Int4Weight w;
  w.group_size = group_size;
  w.qweight = Tensor(cpu_allocator(), DType::kI4, {n, k});
  std::memset(w.qweight.view().data(), 0, w.qweight.view().num_bytes());
  w.scales = Tensor(cpu_allocator(), scale_dtype, {n, k / group_size});
  if (with_zeros) w.zeros = Tensor(cpu_allocator(), DType::kU8, {n, k / group_size});
  return w;
}

// scales[g, n] (checkpoint) -> out.scales[n, g], element bytes copied as they are.
void transpose_scales(const TensorView& scales, Int4Weight& out) {
  const int64_t num_groups = scales.size(0), n = scales.size(1);
  const size_t bytes = dtype_bytes(scales.dtype(), 1);
  const char* src = static_cast<const char*>(scales.data());
  char* dst = static_cast<char*>(out.scales.view().data());
  for (int64_t g = 0; g < num_groups; ++g)
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + (j * num_groups + g) * bytes, src + (g * n + j) * bytes, bytes);
}

}  // namespace

int Int4Weight::quant(int64_t n, int64_t k) const {
  const uint8_t byte = qweight.data_as<const uint8_t>()[(n * in_features() + k) / 2];
  return (byte >> (4 * (k % 2))) & 0xF;
}

int Int4Weight::zero(int64_t n, int64_t k) const {
  if (zeros.empty()) return 8;
  return zeros.data_as<const uint8_t>()[n * (in_features() / group_size) + k / group_size];
}

Int4Weight from_awq(const AwqTensors& t, int64_t group_size, const std::string& name) {
  if (t.qweight.rank() != 2)
    throw_error(ErrorCode::kInvalidArgument, "{}.qweight is {} but must be i32 [in_features, out_features / 8]",
                name, t.qweight.describe());
  const int64_t k = t.qweight.size(0), n = t.qweight.size(1) * 8;
  check_group(k, group_size, name);
  const int64_t num_groups = k / group_size;
  check_tensor(t.qweight, name, "qweight", DType::kI32, {k, n / 8});
  check_tensor(t.qzeros, name, "qzeros", DType::kI32, {num_groups, n / 8});
  check_scales(t.scales, name, {num_groups, n});
  Int4Weight w = empty_weight(n, k, group_size, t.scales.dtype(), /*with_zeros=*/true);
  transpose_scales(t.scales, w);
  for (int64_t row = 0; row < k; ++row) {
    for (int64_t j = 0; j < n / 8; ++j) {
      const uint32_t word = word_at(t.qweight, row, j);
      for (int i = 0; i < 8; ++i) set_quant(w.qweight, 8 * j + kAwqOrder[i], row, (word >> (4 * i)) & 0xF);
    }
  }
  uint8_t* zeros = w.zeros.data_as<uint8_t>();
  for (int64_t g = 0; g < num_groups; ++g) {
    for (int64_t j = 0; j < n / 8; ++j) {
      const uint32_t word = word_at(t.qzeros, g, j);
      for (int i = 0; i < 8; ++i) zeros[(8 * j + kAwqOrder[i]) * num_groups + g] = (word >> (4 * i)) & 0xF;
    }
  }
  return w;
}

Int4Weight from_gptq(const GptqTensors& t, int64_t group_size, const GptqOptions& options,
                     const std::string& name) {
  if (t.qweight.rank() != 2)
    throw_error(ErrorCode::kInvalidArgument, "{}.qweight is {} but must be i32 [in_features / 8, out_features]",
                name, t.qweight.describe());
  const int64_t k = t.qweight.size(0) * 8, n = t.qweight.size(1);
  check_group(k, group_size, name);
  if (n % 8 != 0)
    throw_error(ErrorCode::kInvalidArgument, "{}: out_features {} must be a multiple of 8", name, n);
  const int64_t num_groups = k / group_size;
  check_tensor(t.qweight, name, "qweight", DType::kI32, {k / 8, n});
  check_tensor(t.qzeros, name, "qzeros", DType::kI32, {num_groups, n / 8});
  check_scales(t.scales, name, {num_groups, n});
  if (!t.g_idx.empty()) {
    check_tensor(t.g_idx, name, "g_idx", DType::kI32, {k});
    for (int64_t i = 0; i < k; ++i)
      if (t.g_idx.data_as<const int32_t>()[i] != i / group_size)
        throw_error(ErrorCode::kUnsupported,
                    "{}.g_idx[{}] is {} but {} was expected: reordered (desc_act / act-order) GPTQ "
                    "weights are not supported", name, i, t.g_idx.data_as<const int32_t>()[i], i / group_size);
  }
  Int4Weight w = empty_weight(n, k, group_size, t.scales.dtype(), /*with_zeros=*/!options.symmetric);
  transpose_scales(t.scales, w);
  for (int64_t r = 0; r < k / 8; ++r) {
    for (int64_t col = 0; col < n; ++col) {
      const uint32_t word = word_at(t.qweight, r, col);
      for (int i = 0; i < 8; ++i) set_quant(w.qweight, col, 8 * r + i, (word >> (4 * i)) & 0xF);
    }
  }
  for (int64_t g = 0; g < num_groups; ++g) {
    for (int64_t j = 0; j < n / 8; ++j) {
      const uint32_t word = word_at(t.qzeros, g, j);
      for (int i = 0; i < 8; ++i) {
        // Version 1 stores zero - 1 in 4 bits, so a zero of 0 wraps to 15 and reads back as 16,
        // which is also what GPTQ's own kernels compute.
        const int zero = static_cast<int>((word >> (4 * i)) & 0xF) + options.zero_offset;
        if (options.symmetric) {
          if (zero != 8)
            throw_error(ErrorCode::kInvalidArgument,
                        "{}.qzeros: column {} group {} has zero point {} but a symmetric (sym) checkpoint "
                        "must have 8 everywhere", name, 8 * j + i, g, zero);
        } else {
          w.zeros.data_as<uint8_t>()[(8 * j + i) * num_groups + g] = static_cast<uint8_t>(zero);
        }
      }
    }
  }
  return w;
}

AwqPacked to_awq(const Int4Weight& w) {
  const int64_t n = w.out_features(), k = w.in_features(), num_groups = k / w.group_size;
  BRISK_CHECK(n % 8 == 0, "AutoAWQ packing needs out_features to be a multiple of 8, got {}", n);
  AwqPacked out;
  out.qweight = Tensor(cpu_allocator(), DType::kI32, {k, n / 8});
  out.qzeros = Tensor(cpu_allocator(), DType::kI32, {num_groups, n / 8});
  out.scales = Tensor(cpu_allocator(), w.scales.dtype(), {num_groups, n});
  for (int64_t row = 0; row < k; ++row) {
    for (int64_t j = 0; j < n / 8; ++j) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= static_cast<uint32_t>(w.quant(8 * j + kAwqOrder[i], row)) << (4 * i);
      out.qweight.data_as<int32_t>()[row * (n / 8) + j] = static_cast<int32_t>(word);
    }
  }
  const size_t bytes = dtype_bytes(w.scales.dtype(), 1);
  for (int64_t g = 0; g < num_groups; ++g) {
    for (int64_t j = 0; j < n / 8; ++j) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        const int zero = w.zero(8 * j + kAwqOrder[i], g * w.group_size);
        BRISK_CHECK(zero <= 15, "AutoAWQ packing needs zero points in [0, 15], got {}", zero);
        word |= static_cast<uint32_t>(zero) << (4 * i);
      }
      out.qzeros.data_as<int32_t>()[g * (n / 8) + j] = static_cast<int32_t>(word);
    }
    for (int64_t col = 0; col < n; ++col)
      std::memcpy(static_cast<char*>(out.scales.view().data()) + (g * n + col) * bytes,
                  static_cast<const char*>(w.scales.view().data()) + (col * num_groups + g) * bytes, bytes);
  }
  return out;
}

Int4Weight quantize_rtn(TensorView weight, int64_t group_size, DType scale_dtype) {
  BRISK_CHECK(weight.rank() == 2 && weight.is_contiguous() && is_floating(weight.dtype()),
              "quantize_rtn: weight is {} but must be a contiguous float [N, K] matrix", weight.describe());
  const int64_t n = weight.size(0), k = weight.size(1), num_groups = k / group_size;
  check_group(k, group_size, "quantize_rtn");
  Int4Weight w = empty_weight(n, k, group_size, scale_dtype, /*with_zeros=*/true);
  parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(k);
    for (int64_t r = begin; r < end; ++r) {
      convert_on_host(TensorView(row.data(), DType::kF32, {k}), weight.slice(0, r, r + 1).reshape({k}));
      for (int64_t g = 0; g < num_groups; ++g) {
        const float* values = row.data() + g * group_size;
        const auto [lo, hi] = std::minmax_element(values, values + group_size);
        // The scale as stored, so that q is chosen for the value the kernels will use.
        store_float(w.scales, r * num_groups + g, std::max(*hi - *lo, 1e-5f) / 15.0f);
        const float scale = load_float(w.scales, r * num_groups + g);
        const float zero = std::clamp(-std::nearbyint(*lo / scale), 0.0f, 15.0f);
        w.zeros.data_as<uint8_t>()[r * num_groups + g] = static_cast<uint8_t>(zero);
        for (int64_t i = 0; i < group_size; ++i) {
          const float q = std::clamp(std::nearbyint(values[i] / scale) + zero, 0.0f, 15.0f);
          set_quant(w.qweight, r, g * group_size + i, static_cast<int>(q));
        }
      }
    }
  });
  return w;
}

Tensor dequantize(const Int4Weight& w) {
  const int64_t n = w.out_features(), k = w.in_features(), num_groups = k / w.group_size;
  Tensor out(cpu_allocator(), DType::kF32, {n, k});
  parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t i = 0; i < k; ++i) {
        const float scale = load_float(w.scales, r * num_groups + i / w.group_size);
        out.data_as<float>()[r * k + i] = static_cast<float>(w.quant(r, i) - w.zero(r, i)) * scale;
      }
    }
  });
  return out;
}

Int4Weight concat_rows(const std::vector<Int4Rows>& parts) {
  BRISK_CHECK(!parts.empty(), "concat_rows: no parts");
  const Int4Weight& first = *parts.front().weight;
  const int64_t k = first.in_features(), num_groups = k / first.group_size;
  int64_t n = 0;
  for (const Int4Rows& p : parts) {
    const Int4Weight& w = *p.weight;
    BRISK_CHECK(w.in_features() == k && w.group_size == first.group_size &&
                    w.scales.dtype() == first.scales.dtype() && w.zeros.empty() == first.zeros.empty(),
                "concat_rows: parts differ in in_features, group size, scale dtype or zero points");
    BRISK_CHECK(p.begin >= 0 && p.count >= 0 && p.begin + p.count <= w.out_features(),
                "concat_rows: rows [{}, {}) of a weight with {} rows", p.begin, p.begin + p.count,
                w.out_features());
    n += p.count;
  }
  Int4Weight out = empty_weight(n, k, first.group_size, first.scales.dtype(), !first.zeros.empty());
  const size_t scale_row = dtype_bytes(first.scales.dtype(), num_groups);
  int64_t row = 0;
  for (const Int4Rows& p : parts) {
    auto copy = [&](const Tensor& src, Tensor& dst, size_t row_bytes) {
      std::memcpy(static_cast<char*>(dst.view().data()) + row * row_bytes,
                  static_cast<const char*>(src.view().data()) + p.begin * row_bytes, p.count * row_bytes);
    };
    copy(p.weight->qweight, out.qweight, static_cast<size_t>(k / 2));
    copy(p.weight->scales, out.scales, scale_row);
    if (!first.zeros.empty()) copy(p.weight->zeros, out.zeros, static_cast<size_t>(num_groups));
    row += p.count;
  }
  return out;
}

Int4Weight slice_columns(const Int4Weight& w, int64_t begin, int64_t count) {
  // One group per row: its scale and zero point hold for any columns, and the slice is one group.
  const bool one_group = w.group_size == w.in_features();
  BRISK_CHECK(one_group || (begin % w.group_size == 0 && count % w.group_size == 0),
              "slice_columns: columns [{}, {}) are not whole groups of {}", begin, begin + count, w.group_size);
  const int64_t first_group = one_group ? 0 : begin / w.group_size;
  const int64_t num_groups = one_group ? 1 : count / w.group_size;
  Int4Weight out{copy_columns(w.qweight, begin, count), copy_columns(w.scales, first_group, num_groups), Tensor(),
                 one_group ? count : w.group_size};
  if (!w.zeros.empty()) out.zeros = copy_columns(w.zeros, first_group, num_groups);
  return out;
}

}  // namespace brisk
