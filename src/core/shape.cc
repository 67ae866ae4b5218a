#include "core/shape.h"

#include "core/error.h"

namespace brisk {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t dim) {
  BRISK_CHECK(rank_ < kMaxDims, "shape has more than {} dimensions", kMaxDims);
  BRISK_CHECK(dim >= 0, "negative dimension {} in shape {}", dim, to_string());
  dims_[rank_++] = dim;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string out = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) out += ", ";
    out += std::to_string(dims_[i]);
  }
  return out + "]";
}

int Shape::normalize(int i) const {
  int j = i < 0 ? i + rank_ : i;
  BRISK_CHECK(j >= 0 && j < rank_, "dimension index {} out of range for shape {}", i, to_string());
  return j;
}

}  // namespace brisk
