#include "server/event_pump.h"

#include <chrono>
#include <functional>
#include <utility>

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
    std::lock_guard<std::mutex> lock(wake_->mutex);
    wake_->stop = true;
  }
  wake_->cv.notify_all();
  thread_.join();
}

void EventPump::watch(std::shared_ptr<RequestStream> stream, int32_t num_samples, int32_t prompt_index,
                      std::shared_ptr<EventInbox> inbox) {
  {
    std::lock_guard<std::mutex> lock(wake_->mutex);
    wake_->incoming.push_back({std::move(stream), num_samples, prompt_index, std::move(inbox)});
  }
  wake_->cv.notify_all();
}

void EventPump::sweep(std::vector<Watched>& watched) {
  for (size_t i = 0; i < watched.size();) {
    Watched& w = watched[i];
    while (w.num_unfinished > 0) {
      std::optional<RequestEvent> event = w.stream->next(std::chrono::milliseconds(0));
      if (!event) break;
      if (event->kind == RequestEvent::Kind::kFinished) {
        // A request rejected at admission ends with one kError for all of its samples.
        w.num_unfinished = event->rejected ? 0 : w.num_unfinished - 1;
      }
      w.inbox->deliver({w.prompt_index, std::move(*event)});
    }
    if (w.num_unfinished == 0) {
      w.stream->set_notify({});
      watched[i] = std::move(watched.back());
      watched.pop_back();
    } else {
      ++i;
    }
  }
}

void EventPump::loop() {
  // The streams' callback: marks an event and wakes this thread (never blocks the engine for
  // longer than the lock).
  const std::shared_ptr<Wake> wake = wake_;
  const std::function<void()> notify = [wake] {
    {
      std::lock_guard<std::mutex> lock(wake->mutex);
      wake->events = true;
    }
    wake->cv.notify_one();
  };
  std::vector<Watched> watched;
  while (true) {
    std::vector<Watched> arrived;
    {
      std::unique_lock<std::mutex> lock(wake->mutex);
      wake->cv.wait(lock, [&] { return wake->stop || wake->events || !wake->incoming.empty(); });
      if (wake->stop) return;
      wake->events = false;  // an event from here on wakes the next round
      arrived = std::exchange(wake->incoming, {});
    }
    // Events queued before the callback was set are announced by set_notify itself.
    for (Watched& w : arrived) {
      w.stream->set_notify(notify);
      watched.push_back(std::move(w));
    }
    sweep(watched);
  }
}

}  // namespace brisk::server
