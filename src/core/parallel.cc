#include "core/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace brisk {
namespace {

thread_local bool t_in_pool = false;

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) {
    for (int i = 0; i < num_threads - 1; ++i) workers_.emplace_back([this] { worker_loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(i) for i in [0, num_tasks); the calling thread takes part.
  void run(int num_tasks, const std::function<void(int)>& task) {
    std::unique_lock<std::mutex> job_lock(job_mutex_);  // one job at a time
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      num_tasks_ = num_tasks;
      next_task_ = 0;
      pending_ = num_tasks;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    t_in_pool = true;
    drain();
    t_in_pool = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void worker_loop() {
    t_in_pool = true;
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
    }
  }

  void drain() {
    while (true) {
      int index;
      const std::function<void(int)>* task;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (task_ == nullptr || next_task_ >= num_tasks_) return;
        index = next_task_++;
        task = task_;
      }
      try {
        (*task)(index);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* task_ = nullptr;
  int num_tasks_ = 0;
  int next_task_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

ThreadPool& pool() {
  static ThreadPool instance(num_cpu_threads());
  return instance;
}

}  // namespace

int num_cpu_threads() {
  static const int count = [] {
    if (const char* env = std::getenv("BRISK_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return count;
}

void parallel_for(int64_t num_items, int64_t min_chunk,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (num_items <= 0) return;
  int threads = num_cpu_threads();
  if (t_in_pool || threads == 1 || num_items <= std::max<int64_t>(min_chunk, 1)) {
    fn(0, num_items);
    return;
  }
  int64_t num_chunks = std::min<int64_t>(threads * 4, (num_items + min_chunk - 1) / std::max<int64_t>(min_chunk, 1));
  num_chunks = std::max<int64_t>(num_chunks, 1);
  int64_t chunk = (num_items + num_chunks - 1) / num_chunks;
  num_chunks = (num_items + chunk - 1) / chunk;
  pool().run(static_cast<int>(num_chunks), [&](int i) {
    int64_t begin = i * chunk;
    fn(begin, std::min(num_items, begin + chunk));
  });
}

}  // namespace brisk
