// Moves engine events to HTTP coroutines without blocking an Asio thread per request.
//
// The engine's RequestStream::next blocks; thousands of open streams must not need thousands of
// threads. One pump thread sleeps until a watched stream signals a new event (set_notify), then
// drains every watched stream without waiting, appends what it finds to the request's EventInbox
// and wakes the coroutine through the inbox's channel (a signal: many events may arrive per
// wake-up). Event timestamps come from the engine.
// A stream is watched until all of its samples have finished (a cancelled request still ends
// with kFinished), so the pump never drops a stream with events the engine still holds.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>

#include "brisk/engine.h"

namespace brisk::server {

struct InboxEvent {
  int32_t prompt_index = 0;  // which of the HTTP request's prompts (completions may send several)
  RequestEvent event;
};

// The events of one HTTP request's engine requests, filled by the pump thread.
class EventInbox {
 public:
  using Signal = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  // `executor`: where the consuming coroutine runs (its connection's strand).
  explicit EventInbox(boost::asio::any_io_executor executor) : signal_(executor, 1) {}

  // Everything delivered since the last take(), in arrival order.
  std::vector<InboxEvent> take();
  // Receives once after each delivery (coalesced): await it when take() came back empty.
  Signal& signal() { return signal_; }

  void deliver(InboxEvent event);

 private:
  std::mutex mutex_;
  std::vector<InboxEvent> events_;
  Signal signal_;
};

class EventPump {
 public:
  EventPump();
  ~EventPump();  // stops the thread; streams still watched are dropped

  // Watches `stream` (of a request with `num_samples` samples) until its last sample finishes.
  void watch(std::shared_ptr<RequestStream> stream, int32_t num_samples, int32_t prompt_index,
             std::shared_ptr<EventInbox> inbox);

 private:
  struct Watched {
    std::shared_ptr<RequestStream> stream;
    int32_t num_unfinished = 1;
    int32_t prompt_index = 0;
    std::shared_ptr<EventInbox> inbox;
  };
  // What the pump thread waits on, shared with the streams' notify callbacks (which may outlive
  // the pump).
  struct Wake {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<Watched> incoming;
    bool events = false;  // some stream signalled since the last sweep began
    bool stop = false;
  };
  void loop();
  // Drains every watched stream once, dropping those whose last sample finished.
  static void sweep(std::vector<Watched>& watched);

  std::shared_ptr<Wake> wake_ = std::make_shared<Wake>();
  std::thread thread_;
};

}  // namespace brisk::server
