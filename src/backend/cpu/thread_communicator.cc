#include "backend/cpu/thread_communicator.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "backend/cpu/float_rows.h"
#include "core/error.h"

namespace brisk {
namespace {

// What the ranks of one group share: a reusable barrier and the views of the collective under way.
class Group {
 public:
  explicit Group(int size) : size_(size), views_(size) {}
  int size() const { return size_; }

  // Publishes rank's view, waits for every rank's, runs fn (on every rank: each computes its share),
  // then waits until every rank has finished fn.
  template <typename Fn>
  void collective(int rank, TensorView view, Fn&& fn) {
    views_[rank] = view;
    arrive();
    fn(views_);
    arrive();
  }
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex_);
    BRISK_CHECK(!aborted_, "tensor parallelism: another rank failed");
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    BRISK_CHECK(!aborted_, "tensor parallelism: another rank failed");
  }

  const int size_;
  std::vector<TensorView> views_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

// Sum of values[0..n) added in pairs over halves: (v0 + v1) for two, ((v0 + v1) + (v2 + v3)) for four.
float pairwise_sum(const float* values, int n) {
  if (n == 1) return values[0];
  const int half = n / 2;
  return pairwise_sum(values, half) + pairwise_sum(values + half, n - half);
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }

  void all_reduce_sum(TensorView x) override {
    BRISK_CHECK(x.is_contiguous(), "all_reduce_sum: x must be contiguous, got {}", x.describe());
    group_->collective(rank_, x, [&](const std::vector<TensorView>& views) {
      check_same(views, x);
      // Rank r sums elements [r * n / size, (r + 1) * n / size) and writes them to every rank.
      const int size = group_->size();
      const int64_t n = x.num_elements();
      const int64_t begin = n * rank_ / size, end = n * (rank_ + 1) / size;
      if (begin == end) return;
      const cpu::LoadFn load = cpu::load_fn(x.dtype());
      const cpu::StoreFn store = cpu::store_fn(x.dtype());
      std::vector<float> rows(static_cast<size_t>(size) * (end - begin));
      for (int r = 0; r < size; ++r) load(element(views[r], begin), rows.data() + r * (end - begin), end - begin);
      std::vector<float> sum(end - begin), values(size);
      for (int64_t i = 0; i < end - begin; ++i) {
        for (int r = 0; r < size; ++r) values[r] = rows[r * (end - begin) + i];
        sum[i] = pairwise_sum(values.data(), size);
      }
      // Every rank has loaded its inputs before any writes (the sums read all ranks' elements of
      // this range only, and only this rank writes them).
      for (int r = 0; r < size; ++r) store(sum.data(), element(views[r], begin), end - begin);
    });
  }

  void all_gather_columns(TensorView x, TensorView out) override {
    const int size = group_->size();
    BRISK_CHECK(x.rank() == 2 && out.rank() == 2 && out.is_contiguous() && x.dtype() == out.dtype() &&
                    out.size(0) == x.size(0) && out.size(1) == x.size(1) * size,
                "all_gather_columns: out must be contiguous {}[{}, {}] for x {}", dtype_name(x.dtype()), x.size(0),
                x.size(1) * size, x.describe());
    group_->collective(rank_, x, [&](const std::vector<TensorView>& views) {
      check_same(views, x);
      const int64_t cols = x.size(1);
      const size_t row_bytes = dtype_bytes(x.dtype(), cols);
      for (int r = 0; r < size; ++r)
        for (int64_t i = 0; i < x.size(0); ++i)
          std::memcpy(cpu::element_ptr(out, i, r * cols), cpu::element_ptr(views[r], i, 0), row_bytes);
    });
  }

  void abort() override { group_->abort(); }

 private:
  static char* element(const TensorView& v, int64_t index) {
    return static_cast<char*>(v.data()) + dtype_bytes(v.dtype(), index);
  }
  void check_same(const std::vector<TensorView>& views, const TensorView& x) const {
    for (const TensorView& v : views)
      BRISK_CHECK(v.shape() == x.shape() && v.dtype() == x.dtype(),
                  "tensor parallelism: rank {} has {} where another rank has {}", rank_, x.describe(), v.describe());
  }

  std::shared_ptr<Group> group_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int size) {
  BRISK_CHECK(size >= 1, "tensor parallelism: a group needs at least one rank, got {}", size);
  auto group = std::make_shared<Group>(size);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<ThreadCommunicator>(group, r));
  return out;
}

}  // namespace brisk
