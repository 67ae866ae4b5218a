// ReplayGraphBackend ("cpu-graphs"): a recorded graph repeats the recorded op calls on the same
// memory, reading the memory's contents at replay but keeping the host values it was recorded
// with, and the memory its calls allocated and released stays reserved for it.
#include <gtest/gtest.h>

#include <vector>

#include "backend/make_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::make_tensor;
using testing::to_doubles;

TEST(ReplayGraphBackend, ReplaysRecordedCallsOnTheSameMemory) {
  auto backend = make_backend("cpu-graphs");
  EXPECT_EQ(backend->name(), "cpu-graphs");
  Tensor x = make_tensor(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor w = make_tensor(DType::kF32, {1, 2}, {1, 10});
  Tensor y = make_tensor(DType::kF32, {3, 1}, {0, 0, 0});
  int64_t rows = 2;  // a host value: fixed when recorded
  int runs = 0;
  auto graph = backend->record_graph([&] {
    ++runs;
    // A temporary the calls write and read, released when the recording ends.
    Tensor product(backend->allocator(), DType::kF32, {rows, 1});
    backend->gemm({x.view().slice(0, 0, rows), w, {}, product});
    backend->copy(y.view().slice(0, 0, rows), product);
  });
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(runs, 2);  // a warm-up run that computes, then the recording
  EXPECT_EQ(to_doubles(y), (std::vector<double>{21, 43, 0}));

  // Memory handed out after the recording (by the backend or the heap, which would take a
  // released block back first) must not be the graph's temporary.
  std::vector<Tensor> tensors;
  std::vector<std::vector<float>> heap;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(make_tensor(DType::kF32, {2, 1}, {-7, -7}));
    for (size_t n : {2, 16, 24, 32}) heap.emplace_back(n, -7.0f);
  }
  x.data_as<float>()[0] = 100;  // memory is read at replay
  rows = 3;                     // host values are not
  graph->replay();
  EXPECT_EQ(to_doubles(y), (std::vector<double>{120, 43, 0}));
  for (const Tensor& t : tensors) EXPECT_EQ(to_doubles(t), (std::vector<double>{-7, -7}));
  for (const auto& values : heap)
    for (float v : values) ASSERT_EQ(v, -7.0f);
}

TEST(ReplayGraphBackend, ServesOneRank) {
  EXPECT_NE(make_backend("cpu-graphs", 0), nullptr);
  EXPECT_ERROR_CONTAINS(make_backend("cpu-graphs", 1), "backend 'cpu-graphs' runs one rank");
}

}  // namespace
}  // namespace brisk
