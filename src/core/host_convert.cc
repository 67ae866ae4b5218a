#include "core/host_convert.h"

#include <cstring>

#include "core/error.h"

namespace brisk {

float load_float(TensorView src, int64_t i) {
  switch (src.dtype()) {
    case DType::kF32: return src.data_as<float>()[i];
    case DType::kF16: return half_to_float(src.data_as<Half>()[i]);
    case DType::kBF16: return bf16_to_float(src.data_as<BFloat16>()[i]);
    case DType::kF8E4M3: return e4m3_to_float(src.data_as<uint8_t>()[i]);
    default: throw_error(ErrorCode::kUnsupported, "load_float: {} is not a float dtype", src.describe());
  }
}

void store_float(TensorView dst, int64_t i, float value) {
  switch (dst.dtype()) {
    case DType::kF32: dst.data_as<float>()[i] = value; return;
    case DType::kF16: dst.data_as<Half>()[i] = float_to_half(value); return;
    case DType::kBF16: dst.data_as<BFloat16>()[i] = float_to_bf16(value); return;
    case DType::kF8E4M3: dst.data_as<uint8_t>()[i] = float_to_e4m3(value); return;
    default: throw_error(ErrorCode::kUnsupported, "store_float: {} is not a float dtype", dst.describe());
  }
}

void convert_on_host(TensorView dst, TensorView src) {
  BRISK_CHECK(dst.num_elements() == src.num_elements(), "convert {} into {}: element counts differ",
              src.describe(), dst.describe());
  BRISK_CHECK(dst.is_contiguous() && src.is_contiguous(), "convert {} into {}: views must be contiguous",
              src.describe(), dst.describe());
  if (dst.dtype() == src.dtype()) {
    std::memcpy(dst.data(), src.data(), src.num_bytes());
    return;
  }
  for (int64_t i = 0; i < src.num_elements(); ++i) store_float(dst, i, load_float(src, i));
}

}  // namespace brisk
