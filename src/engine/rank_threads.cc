#include "engine/rank_threads.h"

#include <utility>

namespace brisk {

RankThreads::RankThreads(int num_ranks, std::function<void(int)> on_start)
    : num_ranks_(num_ranks), on_start_(std::move(on_start)), errors_(num_ranks) {
  if (num_ranks_ == 1) return;
  for (int r = 0; r < num_ranks_; ++r) threads_.emplace_back([this, r] { worker(r, on_start_); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankThreads::run(const std::function<void(int)>& fn) {
  if (num_ranks_ == 1) {
    if (on_start_) on_start_(0);
    fn(0);
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &fn;
  pending_ = num_ranks_;
  for (std::exception_ptr& e : errors_) e = nullptr;
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [this] { return pending_ == 0; });
  task_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

void RankThreads::worker(int rank, const std::function<void(int)>& on_start) {
  std::exception_ptr start_error;
  try {
    if (on_start) on_start(rank);
  } catch (...) {
    start_error = std::current_exception();
  }
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      task = task_;
    }
    std::exception_ptr error = start_error;
    try {
      if (!error) (*task)(rank);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    errors_[rank] = error;
    if (--pending_ == 0) done_.notify_all();
  }
}

}  // namespace brisk
