// The threads of a tensor-parallel group: one per rank, each running that rank's share of every
// step, so that the ranks meet at their collectives (and a GPU rank's thread stays on its GPU).
// One rank needs no thread: run() then calls in place.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace brisk {

class RankThreads {
 public:
  // on_start(rank) runs first on each rank's thread (a GPU rank binds its device there); an
  // error there fails every later run of that rank. With one rank it runs before every run, on
  // whichever thread calls it.
  explicit RankThreads(int num_ranks, std::function<void(int rank)> on_start = {});
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return num_ranks_; }
  // Runs fn(rank) for every rank at once, rank r always on the same thread; returns when all have
  // returned, rethrowing the lowest rank's error if any failed.
  void run(const std::function<void(int rank)>& fn);

 private:
  void worker(int rank, const std::function<void(int)>& on_start);

  int num_ranks_;
  std::function<void(int)> on_start_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace brisk
