#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"

namespace brisk {

std::string_view device_name(Device device) { return device == Device::kCpu ? "cpu" : "cuda"; }

TensorView::TensorView(void* data, DType dtype, Shape shape, Device device)
    : data_(data), dtype_(dtype), shape_(shape), device_(device) {
  int64_t stride = 1;
  for (int i = shape_.rank() - 1; i >= 0; --i) {
    strides_[i] = stride;
    stride *= shape_[i];
  }
}

TensorView::TensorView(void* data, DType dtype, Shape shape,
                       std::array<int64_t, Shape::kMaxDims> strides, Device device)
    : data_(data), dtype_(dtype), shape_(shape), strides_(strides), device_(device) {}

int64_t TensorView::stride(int dim) const {
  int d = dim < 0 ? dim + rank() : dim;
  BRISK_CHECK(d >= 0 && d < rank(), "stride of dimension {} requested for {}", dim, describe());
  return strides_[d];
}

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

TensorView TensorView::slice(int dim, int64_t start, int64_t end) const {
  int d = dim < 0 ? dim + rank() : dim;
  BRISK_CHECK(d >= 0 && d < rank(), "slice of dimension {} of {}", dim, describe());
  BRISK_CHECK(0 <= start && start <= end && end <= shape_[d], "slice [{}, {}) of dimension {} of {}",
              start, end, d, describe());
  BRISK_CHECK(dtype_bits(dtype_) >= 8 || d == 0, "packed {} views can only be sliced on dimension 0",
              dtype_name(dtype_));
  TensorView out = *this;
  out.shape_[d] = end - start;
  out.data_ = static_cast<char*>(data_) + dtype_bytes(dtype_, start * strides_[d]);
  return out;
}

TensorView TensorView::reshape(Shape shape) const {
  BRISK_CHECK(is_contiguous(), "reshape of non-contiguous view {}", describe());
  BRISK_CHECK(shape.num_elements() == num_elements(), "reshape of {} to {} changes the element count",
              describe(), shape.to_string());
  return TensorView(data_, dtype_, shape, device_);
}

TensorView TensorView::select(int64_t index) const {
  BRISK_CHECK(rank() >= 1, "select on a scalar view");
  TensorView row = slice(0, index, index + 1);
  Shape shape;
  std::array<int64_t, Shape::kMaxDims> strides{};
  for (int i = 1; i < rank(); ++i) {
    shape.push_back(shape_[i]);
    strides[i - 1] = strides_[i];
  }
  return TensorView(row.data_, dtype_, shape, strides, device_);
}

std::string TensorView::describe() const {
  std::string out(dtype_name(dtype_));
  out += shape_.to_string();
  out += " (";
  out += device_name(device_);
  return out + ")";
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t num_bytes) override {
    if (num_bytes == 0) return nullptr;
    size_t rounded = (num_bytes + 63) / 64 * 64;
    void* ptr = std::aligned_alloc(64, rounded);
    if (ptr == nullptr)
      throw_error(ErrorCode::kOutOfMemory, "host allocation of {} bytes failed", num_bytes);
    return ptr;
  }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
  Device device() const override { return Device::kCpu; }
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator allocator;
  return allocator;
}

Buffer::Buffer(Allocator& allocator, size_t num_bytes)
    : allocator_(&allocator), data_(allocator.allocate(num_bytes)), num_bytes_(num_bytes) {}

Buffer::Buffer(Buffer&& other) noexcept
    : allocator_(other.allocator_), data_(other.data_), num_bytes_(other.num_bytes_) {
  other.allocator_ = nullptr;
  other.data_ = nullptr;
  other.num_bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = other.allocator_;
    data_ = other.data_;
    num_bytes_ = other.num_bytes_;
    other.allocator_ = nullptr;
    other.data_ = nullptr;
    other.num_bytes_ = 0;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (allocator_ && data_) allocator_->deallocate(data_, num_bytes_);
  data_ = nullptr;
}

Tensor::Tensor(Allocator& allocator, DType dtype, Shape shape)
    : buffer_(allocator, dtype_bytes(dtype, shape.num_elements())),
      view_(buffer_.data(), dtype, shape, allocator.device()) {}

Tensor copy_columns(TensorView src, int64_t begin, int64_t count) {
  BRISK_CHECK(src.rank() == 2 && src.device() == Device::kCpu && begin >= 0 && count >= 0 &&
                  begin + count <= src.size(1),
              "copy_columns: columns [{}, {}) of {}", begin, begin + count, src.describe());
  BRISK_CHECK(dtype_bytes(src.dtype(), begin) * 8 == static_cast<size_t>(begin) * dtype_bits(src.dtype()) &&
                  dtype_bytes(src.dtype(), count) * 8 == static_cast<size_t>(count) * dtype_bits(src.dtype()),
              "copy_columns: columns [{}, {}) of {} split a byte", begin, begin + count, src.describe());
  const int64_t rows = src.size(0);
  Tensor out(cpu_allocator(), src.dtype(), {rows, count});
  const size_t row_bytes = dtype_bytes(src.dtype(), count);
  const char* from = static_cast<const char*>(src.data()) + dtype_bytes(src.dtype(), begin);
  const size_t src_row_bytes = dtype_bytes(src.dtype(), src.stride(0));
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(out.view().data()) + r * row_bytes, from + r * src_row_bytes, row_bytes);
  return out;
}

}  // namespace brisk
