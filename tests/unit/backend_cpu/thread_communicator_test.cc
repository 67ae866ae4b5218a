#include "backend/cpu/thread_communicator.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace brisk {
namespace {

// Runs fn(rank) on one thread per rank; returns each rank's error message ("" when none).
std::vector<std::string> on_threads(int size, const std::function<void(int)>& fn) {
  std::vector<std::string> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

TEST(ThreadCommunicator, AllReduceAddsInPairs) {
  auto comms = make_thread_communicators(4);
  // Rank r holds v[r] at every element: the order of the additions shows in the result.
  const float v[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  std::vector<Tensor> x;
  for (int r = 0; r < 4; ++r) {
    x.emplace_back(cpu_allocator(), DType::kF32, Shape{5, 3});
    for (int i = 0; i < 15; ++i) x[r].data_as<float>()[i] = v[r] + static_cast<float>(i);
  }
  on_threads(4, [&](int r) { comms[r]->all_reduce_sum(x[r]); });
  for (int i = 0; i < 15; ++i) {
    const float f = static_cast<float>(i);
    const float expected = ((v[0] + f) + (v[1] + f)) + ((v[2] + f) + (v[3] + f));
    for (int r = 0; r < 4; ++r) EXPECT_EQ(x[r].data_as<float>()[i], expected) << "rank " << r << " element " << i;
  }
}

TEST(ThreadCommunicator, AllGatherPutsRanksSideBySide) {
  auto comms = make_thread_communicators(3);
  std::vector<Tensor> x, out;
  for (int r = 0; r < 3; ++r) {
    x.emplace_back(cpu_allocator(), DType::kI32, Shape{2, 2});
    out.emplace_back(cpu_allocator(), DType::kI32, Shape{2, 6});
    for (int i = 0; i < 4; ++i) x[r].data_as<int32_t>()[i] = 10 * r + i;
  }
  for (int round = 0; round < 3; ++round)  // the group's barriers are reusable
    on_threads(3, [&](int r) { comms[r]->all_gather_columns(x[r], out[r]); });
  const std::vector<int32_t> expected = {0, 1, 10, 11, 20, 21, 2, 3, 12, 13, 22, 23};
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(std::vector<int32_t>(out[r].data_as<int32_t>(), out[r].data_as<int32_t>() + 12), expected);
}

TEST(ThreadCommunicator, MismatchedShapesAndAbortsFailEveryRank) {
  auto comms = make_thread_communicators(2);
  Tensor a(cpu_allocator(), DType::kF32, Shape{4});
  Tensor b(cpu_allocator(), DType::kF32, Shape{5});
  auto errors = on_threads(2, [&](int r) { comms[r]->all_reduce_sum(r == 0 ? a : b); });
  for (const std::string& e : errors) EXPECT_NE(e.find("tensor parallelism: rank"), std::string::npos) << e;

  auto group = make_thread_communicators(2);
  errors = on_threads(2, [&](int r) {
    if (r == 1) {
      group[r]->abort();  // rank 1 failed before its collective
      return;
    }
    group[r]->all_reduce_sum(a);
  });
  EXPECT_NE(errors[0].find("another rank failed"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace brisk
