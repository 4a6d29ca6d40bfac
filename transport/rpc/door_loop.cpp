// The door's waiting (door_loop.hpp).
#include "transport/rpc/door_loop.hpp"

#include <sched.h>

#include <chrono>
#include <thread>

#include "transport/rpc/answer_mailbox.hpp"
#include "transport/rpc/coalescing_stream.hpp"

namespace spindle::transport::rpc {
namespace {

// The door's event loop until the stop, in one of two modes.
//
// Crowded (at the start, and whenever it owed two answers at once): kj's own
// loop, which sleeps whenever it has nothing to run, in windows of 10 ms; a
// window in which the door never owed two answers at once makes it lone.
//
// Lone: after a pass it sleeps until the next call or answer, unless it owes
// no answer and a call came or an answer left within the last `poll_us`: then
// it polls again (yielding to any other runnable thread), so a lone client's
// next call finds the door's core awake. On a VM an idle core halts and waking
// it costs tens of microseconds a call. Owing two answers at once (several
// clients, or calls waiting for the pipelines) makes it crowded again: the cores
// go to the pipelines and the clients, and its waits cost nothing per wake-up.
constexpr auto kCrowdWindow = 10 * kj::MILLISECONDS;

// Lone mode until the door owes two answers at once (false) or the stop (true).
bool run_lone(kj::WaitScope& ws, kj::ForkedPromise<void>& stop, const bool& stopped,
              unsigned poll_us) {
  using clock = std::chrono::steady_clock;
  // Calls served (refusals do not keep the door polling: a client sending bad
  // calls would make it burn a poll window per call).
  auto served = [] { return calls_taken_on_this_thread - calls_refused_on_this_thread; };
  auto last_busy = clock::now();
  std::uint64_t taken = served();
  std::size_t owed = answers_owed_on_this_thread;
  for (;;) {
    ws.poll();
    if (stopped) return true;
    if (answers_owed_peak > 1) return false;
    if (taken != served() || owed != answers_owed_on_this_thread) {
      taken = served();
      owed = answers_owed_on_this_thread;
      last_busy = clock::now();
    }
    if (owed == 0 && clock::now() - last_busy < std::chrono::microseconds(poll_us)) {
      sched_yield();
      continue;
    }
    auto activity = kj::newPromiseAndFulfiller<void>();  // sleep until a call or an answer
    door_activity = activity.fulfiller.get();
    activity.promise.exclusiveJoin(stop.addBranch()).wait(ws);
    door_activity = nullptr;
  }
}

}  // namespace

void run_until_stopped(kj::AsyncIoContext& io, kj::Promise<void> stop, unsigned poll_us) {
  auto& ws = io.waitScope;
  if (poll_us == 0) return stop.wait(ws);
  bool stopped = false;
  auto stop_fork = stop.then([&stopped] { stopped = true; }).fork();
  auto& timer = io.provider->getTimer();
  for (;;) {
    answers_owed_peak = answers_owed_on_this_thread;
    timer.afterDelay(kCrowdWindow).exclusiveJoin(stop_fork.addBranch()).wait(ws);
    if (stopped) return;
    if (answers_owed_peak > 1) continue;  // still crowded
    answers_owed_peak = answers_owed_on_this_thread;
    if (run_lone(ws, stop_fork, stopped, poll_us)) return;
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
