#include <gtest/gtest.h>

#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::make_i32;
using testing::make_tensor;
using testing::to_doubles;

TEST(CpuEmbedding, GathersRowsAndConvertsDtype) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(7);
  const int64_t num_rows = 11, dim = 24;
  const std::vector<int32_t> ids = {3, 0, 10, 3, 7};
  for (DType table_dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (DType out_dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      Tensor table = testing::random_tensor(table_dtype, {num_rows, dim}, rng, -4.0, 4.0);
      Tensor out(cpu_allocator(), out_dtype, {5, dim});
      backend->embedding({table, make_i32({5}, ids), out});
      std::vector<double> table_values = to_doubles(table);
      std::vector<double> expected;
      for (int32_t id : ids) {
        expected.insert(expected.end(), table_values.begin() + id * dim,
                        table_values.begin() + (id + 1) * dim);
      }
      // Exact: one rounding of the stored value to out's dtype.
      EXPECT_EQ(to_doubles(out), to_doubles(make_tensor(out_dtype, {5, dim}, expected)))
          << dtype_name(table_dtype) << " -> " << dtype_name(out_dtype);
    }
  }
}

TEST(CpuEmbedding, GathersFromStridedRows) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(8);
  Tensor wide = testing::random_tensor(DType::kBF16, {6, 10}, rng);
  TensorView table = wide.view().slice(1, 2, 8);  // [6, 6], row stride 10
  Tensor out(cpu_allocator(), DType::kBF16, {2, 6});
  backend->embedding({table, make_i32({2}, {5, 1}), out});
  std::vector<double> all = to_doubles(wide);
  std::vector<double> got = to_doubles(out);
  for (int c = 0; c < 6; ++c) {
    EXPECT_EQ(got[c], all[5 * 10 + 2 + c]);
    EXPECT_EQ(got[6 + c], all[1 * 10 + 2 + c]);
  }
}

// A vocabulary shard (tensor parallelism): rows of its own ids, zero rows for every other id.
TEST(CpuEmbedding, VocabularyShardGivesZeroRowsForOtherIds) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(9);
  Tensor table = testing::random_tensor(DType::kBF16, {4, 3}, rng);  // ids [8, 12)
  Tensor out(cpu_allocator(), DType::kF32, {4, 3});
  backend->embedding({table, make_i32({4}, {9, 3, 12, 8}), out, /*shard_first_id=*/8});
  const std::vector<double> rows = to_doubles(table), got = to_doubles(out);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(got[c], rows[1 * 3 + c]);
    EXPECT_EQ(got[3 + c], 0.0);
    EXPECT_EQ(got[6 + c], 0.0);
    EXPECT_EQ(got[9 + c], rows[c]);
  }
}

TEST(CpuEmbedding, RejectsBadIdsAndShapes) {
  auto backend = make_cpu_backend();
  Tensor table(cpu_allocator(), DType::kF32, {10, 4});
  Tensor out(cpu_allocator(), DType::kF32, {3, 4});
  EXPECT_ERROR_CONTAINS(backend->embedding({table, make_i32({3}, {1, 2, 10}), out}),
                        "ids[2] = 10 is out of range for a table of 10 rows");
  EXPECT_ERROR_CONTAINS(backend->embedding({table, make_i32({3}, {-1, 2, 3}), out}), "ids[0] = -1");
  EXPECT_ERROR_CONTAINS(backend->embedding({table, make_i32({2}, {1, 2}), out}),
                        "ids is i32[2] (cpu) but must have 3 elements");
  Tensor narrow(cpu_allocator(), DType::kF32, {3, 5});
  EXPECT_ERROR_CONTAINS(backend->embedding({table, make_i32({3}, {1, 2, 3}), narrow}),
                        "dim differs");
  Tensor float_ids(cpu_allocator(), DType::kF32, {3});
  EXPECT_ERROR_CONTAINS(backend->embedding({table, float_ids, out}), "ids is f32[3] (cpu) but must be i32");
}

}  // namespace
}  // namespace brisk
