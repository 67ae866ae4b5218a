// Non-owning tensor views (pointer + dtype + shape + strides + device), an owning Buffer,
// the Allocator interface behind it, and Tensor = Buffer + its view.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"

namespace brisk {

enum class Device : uint8_t { kCpu, kCuda };
std::string_view device_name(Device device);

// A view of memory owned elsewhere. Strides are in elements; packed (int4) views must be
// contiguous. Views are cheap values: pass them by value.
class TensorView {
 public:
  TensorView() = default;
  TensorView(void* data, DType dtype, Shape shape, Device device = Device::kCpu);
  TensorView(void* data, DType dtype, Shape shape, std::array<int64_t, Shape::kMaxDims> strides,
             Device device);

  void* data() const { return data_; }
  template <typename T> T* data_as() const { return static_cast<T*>(data_); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t size(int dim) const { return shape_[dim]; }
  int64_t stride(int dim) const;
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t num_bytes() const { return dtype_bytes(dtype_, num_elements()); }
  Device device() const { return device_; }
  bool empty() const { return data_ == nullptr; }
  bool is_contiguous() const;

  // Rows [start, end) of dimension dim; shares memory.
  TensorView slice(int dim, int64_t start, int64_t end) const;
  // Same memory, new shape with the same element count; requires a contiguous view.
  TensorView reshape(Shape shape) const;
  // Drops the first dimension at the given index.
  TensorView select(int64_t index) const;
  std::string describe() const;  // "bf16[2, 3] (cpu)"

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::array<int64_t, Shape::kMaxDims> strides_{};
  Device device_ = Device::kCpu;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t num_bytes) = 0;
  virtual void deallocate(void* ptr, size_t num_bytes) = 0;
  virtual Device device() const = 0;
};

// 64-byte aligned host memory.
Allocator& cpu_allocator();

// Owning, move-only block of bytes from an Allocator.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Allocator& allocator, size_t num_bytes);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t num_bytes() const { return num_bytes_; }
  Device device() const { return allocator_ ? allocator_->device() : Device::kCpu; }

 private:
  void release();
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t num_bytes_ = 0;
};

// A contiguous tensor that owns its memory.
class Tensor {
 public:
  Tensor() = default;
  Tensor(Allocator& allocator, DType dtype, Shape shape);
  const TensorView& view() const { return view_; }
  operator TensorView() const { return view_; }  // NOLINT: views are the currency of ops
  template <typename T> T* data_as() const { return view_.data_as<T>(); }
  DType dtype() const { return view_.dtype(); }
  const Shape& shape() const { return view_.shape(); }
  bool empty() const { return view_.empty(); }

 private:
  Buffer buffer_;
  TensorView view_;
};

// Columns [begin, begin + count) of a 2-D host view with contiguous rows, as a new contiguous
// host tensor (sub-byte dtypes: begin and count must fall on byte boundaries).
Tensor copy_columns(TensorView src, int64_t begin, int64_t count);

}  // namespace brisk
