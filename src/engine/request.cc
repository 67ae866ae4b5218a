// The event queue behind a request's stream, and the names of finish reasons.
#include "engine/request.h"

#include "core/error.h"

namespace brisk {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "?";
}

std::optional<RequestEvent> EventQueue::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  RequestEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

void EventQueue::set_notify(std::function<void()> notify) {
  std::function<void()> call_now;  // called outside the lock, as from push
  {
    std::lock_guard<std::mutex> lock(mutex_);
    notify_ = std::move(notify);
    if (!events_.empty()) call_now = notify_;
  }
  if (call_now) call_now();
}

void EventQueue::push(RequestEvent event) {
  event.time = std::chrono::steady_clock::now();
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    BRISK_ASSERT(num_unfinished_ > 0);  // one terminal event per sample, nothing after the last
    if (event.kind == RequestEvent::Kind::kFinished) num_unfinished_--;
    events_.push_back(std::move(event));
    notify = notify_;
  }
  ready_.notify_all();
  if (notify) notify();
}

}  // namespace brisk
