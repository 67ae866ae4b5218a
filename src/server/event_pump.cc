#include "server/event_pump.h"

#include <chrono>

namespace brisk::server {

std::vector<InboxEvent> EventInbox::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(events_, {});
}

void EventInbox::deliver(InboxEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  // Capacity 1: a signal already pending covers this event too, so a failed try_send is fine.
  signal_.try_send(boost::system::error_code());
}

EventPump::EventPump() : thread_([this] { loop(); }) {}

EventPump::~EventPump() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void EventPump::watch(std::shared_ptr<RequestStream> stream, int32_t num_samples, int32_t prompt_index,
                      std::shared_ptr<EventInbox> inbox) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.push_back({std::move(stream), num_samples, prompt_index, std::move(inbox)});
  }
  wake_.notify_all();
}

bool EventPump::sweep(std::vector<Watched>& watched) {
  bool moved = false;
  for (size_t i = 0; i < watched.size();) {
    Watched& w = watched[i];
    while (w.num_unfinished > 0) {
      std::optional<RequestEvent> event = w.stream->next(std::chrono::milliseconds(0));
      if (!event) break;
      moved = true;
      if (event->kind == RequestEvent::Kind::kFinished) {
        // A request rejected at admission ends with one kError for all of its samples.
        w.num_unfinished = event->rejected ? 0 : w.num_unfinished - 1;
      }
      w.inbox->deliver({w.prompt_index, std::move(*event)});
    }
    if (w.num_unfinished == 0) {
      watched[i] = std::move(watched.back());
      watched.pop_back();
    } else {
      ++i;
    }
  }
  return moved;
}

void EventPump::loop() {
  std::vector<Watched> watched;
  bool moved = false;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Idle: sleep until a stream arrives. Watching: poll again at once after progress, else
      // after a short nap (the engine produces a step's events every few milliseconds at most).
      auto ready = [&] { return stop_ || !incoming_.empty(); };
      if (watched.empty()) wake_.wait(lock, ready);
      else if (!moved) wake_.wait_for(lock, std::chrono::microseconds(500), ready);
      if (stop_) return;
      for (Watched& w : incoming_) watched.push_back(std::move(w));
      incoming_.clear();
    }
    moved = sweep(watched);
  }
}

}  // namespace brisk::server
