#include "engine/rank_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace brisk {
namespace {

TEST(RankThreads, EachRankKeepsItsThreadAndRanksRunAtOnce) {
  RankThreads threads(3);
  std::vector<std::thread::id> first(3), second(3);
  std::atomic<int> arrived{0};
  threads.run([&](int r) {
    first[r] = std::this_thread::get_id();
    ++arrived;
    while (arrived.load() < 3) std::this_thread::yield();  // returns only if all ranks run together
  });
  threads.run([&](int r) { second[r] = std::this_thread::get_id(); });
  EXPECT_EQ(first, second);
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[1], first[2]);
  EXPECT_NE(first[0], std::this_thread::get_id());
}

// One rank runs on the calling thread, which may change (the engine is built on one thread and
// steps on another): on_start binds whichever thread runs.
TEST(RankThreads, OneRankRunsInPlaceAfterOnStart) {
  std::vector<std::thread::id> started;
  RankThreads threads(1, [&](int) { started.push_back(std::this_thread::get_id()); });
  std::thread::id id;
  threads.run([&](int) { id = std::this_thread::get_id(); });
  EXPECT_EQ(id, std::this_thread::get_id());
  std::thread other([&] { threads.run([](int) {}); });
  other.join();
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0], std::this_thread::get_id());
  EXPECT_NE(started[1], std::this_thread::get_id());
}

TEST(RankThreads, TheLowestFailingRankErrorIsRethrown) {
  RankThreads threads(4);
  try {
    threads.run([](int r) {
      if (r >= 2) throw std::runtime_error("rank " + std::to_string(r));
    });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 2");
  }
  int sum = 0;
  std::mutex mutex;
  threads.run([&](int r) {  // usable after an error
    std::lock_guard<std::mutex> lock(mutex);
    sum += r;
  });
  EXPECT_EQ(sum, 6);
}

}  // namespace
}  // namespace brisk
