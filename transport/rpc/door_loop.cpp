// The door's waiting (door_loop.hpp).
#include "transport/rpc/door_loop.hpp"

#include <sched.h>

#include <chrono>
#include <thread>

#include "transport/rpc/answer_mailbox.hpp"
#include "transport/rpc/coalescing_stream.hpp"

namespace spindle::transport::rpc {
namespace {

// The door's event loop until the stop. After a pass it sleeps until the next
// call or answer, unless it owes no answer, a call came or an answer left
// within the last `poll_us` and it has seen no two calls at once for 10 ms:
// then it polls again (yielding to any other runnable thread), so a lone
// client's next call finds the door's core awake. On a VM an idle core halts
// and waking it costs tens of microseconds a call; a door that owes answers,
// or serves several clients, leaves the cores to the pipelines and clients.
constexpr auto kCrowdMemory = std::chrono::milliseconds(10);

}  // namespace

void run_until_stopped(kj::AsyncIoContext& io, kj::Promise<void> stop, unsigned poll_us) {
  auto& ws = io.waitScope;
  if (poll_us == 0) return stop.wait(ws);
  using clock = std::chrono::steady_clock;
  bool stopped = false;
  auto stop_fork = stop.then([&stopped] { stopped = true; }).fork();
  auto last_busy = clock::now(), last_crowd = clock::now();
  std::uint64_t taken = calls_taken_on_this_thread;
  std::size_t owed = answers_owed_on_this_thread;
  for (;;) {
    ws.poll();
    if (stopped) return;
    const auto now = clock::now();
    if (taken != calls_taken_on_this_thread || owed != answers_owed_on_this_thread) {
      if (calls_taken_on_this_thread - taken > 1 || answers_owed_on_this_thread > 1)
        last_crowd = now;
      taken = calls_taken_on_this_thread;
      owed = answers_owed_on_this_thread;
      last_busy = now;
    }
    if (owed == 0 && now - last_busy < std::chrono::microseconds(poll_us) &&
        now - last_crowd > kCrowdMemory) {
      sched_yield();
      continue;
    }
    // Sleep until a call or an answer (or the stop) comes.
    auto activity = kj::newPromiseAndFulfiller<void>();
    door_activity = activity.fulfiller.get();
    activity.promise.exclusiveJoin(stop_fork.addBranch()).wait(ws);
    door_activity = nullptr;
  }
}

void drain_after_stop(kj::WaitScope& ws) {
  // A grace period: a client's calls may still be arriving (on a loaded
  // machine a burst a client queued before the signal reaches the door over
  // tens of ms; with the doors closed at once, 9-29 of 256 were lost with the
  // connection), the refusals of calls close_turn just handed on are on their
  // way to the mailbox, and answers given may wait in a connection's buffer.
  // The loop reads and answers (the service refuses new calls by name) until
  // no call has come for 50 ms, none is owed an answer and every answer is
  // sent, for at most 2 s (a peer that reads nothing, or never stops sending).
  // A client held off the CPU longer than that still finds the door closed.
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + std::chrono::seconds(2);
  auto last_call = clock::now();
  for (std::uint64_t taken = calls_taken_on_this_thread;; ws.poll()) {
    if (calls_taken_on_this_thread != taken) {
      taken = calls_taken_on_this_thread;
      last_call = clock::now();
    }
    const bool quiet = clock::now() - last_call >= std::chrono::milliseconds(50);
    const bool settled = answers_owed_on_this_thread == 0 &&
                         coalescing_stream::unsent_on_this_thread() == 0;
    if ((quiet && settled) || clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace spindle::transport::rpc
