// EventQueue (the engine's RequestStream): set_notify's callback, which the server's event pump
// waits on instead of polling its streams.
#include <gtest/gtest.h>

#include "engine/request.h"

namespace brisk {
namespace {

RequestEvent token_event() {
  RequestEvent e;
  e.kind = RequestEvent::Kind::kToken;
  return e;
}

TEST(EventQueue, NotifiesOncePerEventAndForEventsAlreadyWaiting) {
  EventQueue queue(7);
  queue.push(token_event());
  int calls = 0;
  queue.set_notify([&] { ++calls; });
  EXPECT_EQ(calls, 1);  // the waiting event is announced at once
  queue.push(token_event());
  queue.push(token_event());
  EXPECT_EQ(calls, 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(queue.next(std::chrono::milliseconds(0)).has_value());
  EXPECT_FALSE(queue.next(std::chrono::milliseconds(0)).has_value());
  queue.set_notify({});  // cleared: pushes call nothing
  RequestEvent finished;
  finished.kind = RequestEvent::Kind::kFinished;
  queue.push(finished);
  EXPECT_EQ(calls, 3);
}

TEST(EventQueue, NoCallForAnEmptyQueue) {
  EventQueue queue(8);
  int calls = 0;
  queue.set_notify([&] { ++calls; });
  EXPECT_EQ(calls, 0);
  queue.set_notify([&] { calls += 10; });  // replaces the first
  queue.push(token_event());
  EXPECT_EQ(calls, 10);
}

}  // namespace
}  // namespace brisk
