// Tensor shapes: up to kMaxDims dimensions, row-major.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace brisk {

class Shape {
 public:
  static constexpr int kMaxDims = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  template <typename Container>
  static Shape from(const Container& dims) {
    Shape s;
    for (auto d : dims) s.push_back(static_cast<int64_t>(d));
    return s;
  }

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[normalize(i)]; }
  int64_t& operator[](int i) { return dims_[normalize(i)]; }
  void push_back(int64_t dim);
  int64_t num_elements() const;
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  std::string to_string() const;  // "[2, 3, 4]"

 private:
  int normalize(int i) const;
  std::array<int64_t, kMaxDims> dims_{};
  int rank_ = 0;
};

}  // namespace brisk
