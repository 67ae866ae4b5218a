// brisk._brisk, the extension module under the Python package (python/brisk/__init__.py): one
// int4 (W4A16) linear layer on brisk's backends. Tensors arrive as nanobind ndarrays (numpy
// arrays and any DLPack producer, CPU or CUDA) and are used in place; the Python side checks the
// layer's parameters and allocates outputs, this file checks the tensors and runs the ops.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/make_backend.h"
#include "core/error.h"
#include "model/int4_weight.h"
#ifdef BRISK_WITH_CUDA
#include "backend/caller_stream.h"
#endif

namespace nb = nanobind;

namespace brisk {
namespace {

using InArray = nb::ndarray<nb::ro>;  // any dtype, shape and device
using OutArray = nb::ndarray<>;

// The backends live for the whole process (never destroyed: Python may free layers at exit,
// after CUDA has begun tearing down).
Backend& backend_on(Device device) {
  static Backend* cpu = make_backend("cpu").release();
  if (device == Device::kCpu) return *cpu;
  static Backend* cuda = make_backend("cuda").release();
  return *cuda;
}

// Where a tensor lives: the host, or CUDA device `ordinal`.
struct Place {
  Device device = Device::kCpu;
  int ordinal = 0;
  bool operator==(const Place&) const = default;
  std::string name() const {
    return device == Device::kCpu ? "cpu" : "cuda:" + std::to_string(ordinal);
  }
};

Place place_of(const InArray& a, const std::string& name) {
  const int type = a.device_type();
  if (type == nb::device::cpu::value || type == nb::device::cuda_host::value) return {};
  if (type != nb::device::cuda::value)
    throw nb::value_error(("Linear: " + name + " is on DLPack device type " + std::to_string(type) +
                           "; brisk takes host (cpu) and CUDA tensors").c_str());
#ifdef BRISK_WITH_CUDA
  const int ordinal = cuda::device_ordinal();
  if (a.device_id() != ordinal)
    throw nb::value_error(("Linear: " + name + " is on cuda:" + std::to_string(a.device_id()) +
                           " but brisk runs on cuda:" + std::to_string(ordinal) +
                           " (BRISK_CUDA_DEVICE chooses the GPU, before brisk's first CUDA call)")
                              .c_str());
  return {Device::kCuda, ordinal};
#else
  throw nb::value_error(("Linear: " + name + " is a CUDA tensor but this brisk was built without " +
                         "CUDA: pass host (cpu) tensors, or build brisk where nvcc is installed")
                            .c_str());
#endif
}

DType dtype_of(const InArray& a, const std::string& name) {
  const nb::dlpack::dtype t = a.dtype();
  if (t.lanes == 1) {
    if (t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 32) return DType::kF32;
    if (t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 16) return DType::kF16;
    if (t.code == uint8_t(nb::dlpack::dtype_code::Bfloat) && t.bits == 16) return DType::kBF16;
    if (t.code == uint8_t(nb::dlpack::dtype_code::Int) && t.bits == 32) return DType::kI32;
  }
  throw nb::type_error(("Linear: " + name + " has DLPack dtype code " + std::to_string(t.code) +
                        " of " + std::to_string(t.bits) + " bits; brisk takes float32, float16, " +
                        "bfloat16 and (packed weights) int32")
                           .c_str());
}

// A brisk view of `a`, which must be of one of the `allowed` dtypes.
TensorView view_of(const InArray& a, const std::string& name, std::initializer_list<DType> allowed) {
  const DType dtype = dtype_of(a, name);
  bool ok = false;
  std::string names;
  for (DType d : allowed) {
    ok = ok || d == dtype;
    names += std::string(names.empty() ? "" : " or ") + std::string(dtype_name(d));
  }
  if (!ok)
    throw nb::type_error(("Linear: " + name + " is " + std::string(dtype_name(dtype)) + " but must be " +
                          names)
                             .c_str());
  if (a.ndim() < 1 || a.ndim() > size_t(Shape::kMaxDims))
    throw nb::value_error(("Linear: " + name + " has " + std::to_string(a.ndim()) +
                           " dimensions; brisk takes 1 to " + std::to_string(Shape::kMaxDims))
                              .c_str());
  Shape shape;
  std::array<int64_t, Shape::kMaxDims> strides{};
  std::vector<int64_t> dims;
  for (size_t i = 0; i < a.ndim(); ++i) {
    dims.push_back(int64_t(a.shape(i)));
    strides[i] = a.stride(i);
  }
  shape = Shape::from(dims);
  return TensorView(const_cast<void*>(a.data()), dtype, shape, strides, place_of(a, name).device);
}

// `v` as a matrix [rows, last dimension]: its leading dimensions merged, which needs them to be
// contiguous with each other (a row stride of its own is fine: a slice of a wider tensor).
TensorView as_matrix(const TensorView& v, const std::string& name) {
  const int rank = v.rank();
  const int64_t cols = v.size(rank - 1);
  if (cols > 1 && v.stride(rank - 1) != 1)
    throw nb::value_error(("Linear: " + name + " " + v.describe() +
                           " must be contiguous along its last dimension (.contiguous() makes it so)")
                              .c_str());
  int64_t rows = 1;
  for (int i = 0; i < rank - 1; ++i) rows *= v.size(i);
  const int64_t row_stride = rank == 1 ? cols : v.stride(rank - 2);
  for (int i = 0; i + 2 < rank; ++i)
    if (v.size(i) > 1 && v.stride(i) != v.stride(i + 1) * v.size(i + 1))
      throw nb::value_error(("Linear: " + name + " " + v.describe() +
                             " has leading dimensions that cannot be merged into rows "
                             "(.contiguous() makes it so)")
                                .c_str());
  std::array<int64_t, Shape::kMaxDims> strides{};
  strides[0] = rows > 1 ? row_stride : cols;
  strides[1] = 1;
  return TensorView(v.data(), v.dtype(), Shape{rows, cols}, strides, v.device());
}

// Runs `work` on the caller's stream (and brisk's GPU as the current device) when the backend is
// CUDA.
template <typename F>
void on_stream(Backend& backend, uintptr_t stream, F&& work) {
#ifdef BRISK_WITH_CUDA
  if (backend.device() == Device::kCuda) {
    cuda::CallerStreamScope scope(backend, stream);
    work();
    return;
  }
#endif
  work();
}

// A host copy of `v` (contiguous; on the backend's current stream when it lives on the GPU).
Tensor host_copy(Backend& backend, const TensorView& v, const std::string& name) {
  if (!v.is_contiguous())
    throw nb::value_error(("Linear: " + name + " " + v.describe() +
                           " must be contiguous (.contiguous() makes it so)").c_str());
  Tensor host(cpu_allocator(), v.dtype(), v.shape());
  backend.copy(host, v);
  return host;
}

nb::ndarray<nb::numpy> to_numpy(Tensor tensor) {
  auto* owned = new Tensor(std::move(tensor));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape;
  for (int i = 0; i < owned->view().rank(); ++i) shape.push_back(size_t(owned->shape()[i]));
  nb::dlpack::dtype dtype{uint8_t(nb::dlpack::dtype_code::Float), 32, 1};
  if (owned->dtype() == DType::kI32) dtype = nb::dtype<int32_t>();
  if (owned->dtype() == DType::kF16) dtype = {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
  if (owned->dtype() == DType::kBF16) dtype = {uint8_t(nb::dlpack::dtype_code::Bfloat), 16, 1};
  return nb::ndarray<nb::numpy>(owned->view().data(), shape.size(), shape.data(), owner, nullptr, dtype);
}

// The int4 weights (and bias) of one layer in brisk's layout, on the backend of the device the
// AutoAWQ tensors were given on.
class PackedLinear {
 public:
  PackedLinear(const InArray& qweight, const InArray& qzeros, const InArray& scales,
               std::optional<InArray> bias, int64_t in_features, int64_t out_features,
               int64_t group_size, uintptr_t stream)
      : place_(place_of(qweight, "qweight")), backend_(&backend_on(place_.device)) {
    const int64_t num_groups = in_features / group_size, packed_cols = out_features / 8;
    check_shape(qweight, "qweight", {in_features, packed_cols}, "[in_features, out_features / 8]");
    check_shape(qzeros, "qzeros", {num_groups, packed_cols}, "[in_features / group_size, out_features / 8]");
    check_shape(scales, "scales", {num_groups, out_features}, "[in_features / group_size, out_features]");
    for (auto [array, name] : {std::pair{&qzeros, "qzeros"}, {&scales, "scales"}})
      check_same_place(*array, name);
    // The device work (reading the given tensors, uploading the repacked ones) runs on the
    // caller's stream, like the forward.
    on_stream(*backend_, stream, [&] { repack(qweight, qzeros, scales, bias, group_size); });
  }

  // y = x @ dequant(W) (+ bias) for x [..., in_features], y [..., out_features] of x's dtype.
  void forward(const InArray& x, const OutArray& y, uintptr_t stream) {
    const TensorView xv = view_of(x, "x", {DType::kF32, DType::kF16, DType::kBF16});
    const TensorView yv = view_of(InArray(y), "out", {xv.dtype()});
    check_same_place(x, "x");
    check_same_place(InArray(y), "out");
    const int64_t k = host_.in_features(), n = host_.out_features();
    if (xv.size(xv.rank() - 1) != k)
      throw nb::value_error(("Linear: x is " + xv.describe() +
                             " but its last dimension must be in_features (" + std::to_string(k) + ")")
                                .c_str());
    Shape expected = xv.shape();
    expected[xv.rank() - 1] = n;
    if (yv.shape() != expected || !yv.is_contiguous())
      throw nb::value_error(("Linear: out is " + yv.describe() + " but must be a contiguous " +
                             expected.to_string() + " (x's shape with out_features last)").c_str());
    GemmW4A16Params p;
    p.x = as_matrix(xv, "x");
    p.qweight = qweight_;
    p.scales = scales_;
    p.zeros = zeros_;
    p.layout = layout_;
    p.group_size = int(host_.group_size);
    p.bias = bias_;
    p.y = as_matrix(yv, "out");
    on_stream(*backend_, stream, [&] { backend_->gemm_w4a16(p); });
  }

  std::string device() const { return place_.name(); }

  // dequant(W) as float32 [out_features, in_features] (brisk's layout, rows are output features).
  nb::ndarray<nb::numpy> dequantize() const { return to_numpy(brisk::dequantize(host_)); }

  // The AutoAWQ tensors written back from brisk's layout: (qweight, qzeros, scales).
  nb::tuple to_awq() const {
    AwqPacked packed = brisk::to_awq(host_);
    return nb::make_tuple(to_numpy(std::move(packed.qweight)), to_numpy(std::move(packed.qzeros)),
                          to_numpy(std::move(packed.scales)));
  }

 private:
  // AutoAWQ tensors -> brisk's layout on the host (host_) -> the backend's memory. The one place
  // where weights are repacked.
  void repack(const InArray& qweight, const InArray& qzeros, const InArray& scales,
              const std::optional<InArray>& bias, int64_t group_size) {
    const auto copy = [&](const InArray& a, const char* name, std::initializer_list<DType> dtypes) {
      return host_copy(*backend_, view_of(a, name, dtypes), name);
    };
    Tensor qweight_host = copy(qweight, "qweight", {DType::kI32});
    Tensor qzeros_host = copy(qzeros, "qzeros", {DType::kI32});
    Tensor scales_host = copy(scales, "scales", {DType::kF16, DType::kBF16, DType::kF32});
    host_ = from_awq({qweight_host, qzeros_host, scales_host}, group_size, "Linear");
    if (bias) {
      check_same_place(*bias, "bias");
      bias_host_ = copy(*bias, "bias", {DType::kF32, DType::kF16, DType::kBF16});
      if (bias_host_.view().rank() != 1 || bias_host_.shape()[0] != host_.out_features())
        throw nb::value_error(("Linear: bias is " + bias_host_.view().describe() + " but must be [" +
                               std::to_string(host_.out_features()) + "] (out_features)")
                                  .c_str());
    }
    qweight_ = to_backend(*backend_, host_.qweight, keep_);
    layout_ = backend_->repack_int4(qweight_);  // the backend's fastest layout (the CPU keeps rows)
    scales_ = to_backend(*backend_, host_.scales, keep_);
    zeros_ = to_backend(*backend_, host_.zeros, keep_);
    if (!bias_host_.empty()) bias_ = to_backend(*backend_, bias_host_, keep_);
  }

  static void check_shape(const InArray& a, const std::string& name, Shape expected, const char* meaning) {
    Shape shape;
    for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(int64_t(a.shape(i)));
    if (shape != expected)
      throw nb::value_error(("Linear: " + name + " is " + shape.to_string() + " but must be " +
                             expected.to_string() + " " + meaning).c_str());
  }

  void check_same_place(const InArray& a, const std::string& name) const {
    const Place place = place_of(a, name);
    if (!(place == place_))
      throw nb::value_error(("Linear: " + name + " is on " + place.name() + " but the weights are on " +
                             place_.name() + " (post_init() places them where qweight is)").c_str());
  }

  Place place_;
  Backend* backend_;
  Int4Weight host_;       // brisk's layout on the host
  Tensor bias_host_;      // [N], or empty
  std::vector<Tensor> keep_;  // backend copies (none on the CPU)
  TensorView qweight_, scales_, zeros_, bias_;  // in the backend's memory
  Int4Layout layout_ = Int4Layout::kRows;        // qweight_'s, from Backend::repack_int4
};

void translate_errors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    switch (e.code()) {
      case ErrorCode::kOutOfMemory: PyErr_SetString(PyExc_MemoryError, e.what()); break;
      case ErrorCode::kBackend:
      case ErrorCode::kInternal: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
      default: PyErr_SetString(PyExc_ValueError, e.what()); break;
    }
  }
}

}  // namespace
}  // namespace brisk

NB_MODULE(_brisk, m) {
  using brisk::PackedLinear;
  m.doc() = "brisk's kernels for the brisk Python package (use brisk.Linear)";
  nb::register_exception_translator(brisk::translate_errors);
#ifdef BRISK_WITH_CUDA
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
  nb::class_<PackedLinear>(m, "PackedLinear")
      .def(nb::init<const brisk::InArray&, const brisk::InArray&, const brisk::InArray&,
                    std::optional<brisk::InArray>, int64_t, int64_t, int64_t, uintptr_t>(),
           nb::arg("qweight"), nb::arg("qzeros"), nb::arg("scales"), nb::arg("bias").none(),
           nb::arg("in_features"), nb::arg("out_features"), nb::arg("group_size"), nb::arg("stream"))
      .def("forward", &PackedLinear::forward, nb::arg("x"), nb::arg("out"), nb::arg("stream"))
      .def_prop_ro("device", &PackedLinear::device)
      .def("dequantize", &PackedLinear::dequantize)
      .def("to_awq", &PackedLinear::to_awq);
}
