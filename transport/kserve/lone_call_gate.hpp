// Which KServe gRPC calls may run to completion on the thread that read them
// (the model's express lane): only a call that finds the door empty and quiet.
// gRPC queues calls it has read but not yet handed to a handler where
// admission control cannot see them; a call that ran on a handler thread held
// that queue back, and under overload the queue then drained one lane call at a
// time instead of reaching the batcher (and admission). Pure logic, thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace spindle::transport::kserve {

class lone_call_gate {
 public:
  using clock = std::chrono::steady_clock;

  /// A call is lone when no other call is in the door and the door has been
  /// empty for at least `quiet`. A closed-loop client's next call comes a whole
  /// round trip after its answer (tens of microseconds or more); a call gRPC had
  /// queued behind a lane call reaches its handler a few microseconds after that
  /// call's answer, so it goes to the batcher, and with it every call behind it
  /// (the door is not empty again until the batcher has answered them).
  explicit lone_call_gate(std::chrono::nanoseconds quiet) : quiet_ns_(quiet.count()) {}

  /// A call enters the door at `now`; true: it is lone (may take the lane).
  bool enter(clock::time_point now) {
    const bool first = in_door_.fetch_add(1, std::memory_order_acq_rel) == 0;
    if (!first) return false;
    const std::int64_t since = ns_of(now) - emptied_ns_.load(std::memory_order_acquire);
    return since >= quiet_ns_;
  }
  /// The call is answered at `now` (once per enter). Every answer's time is
  /// stored before the count drops, so a call that then finds the door empty
  /// measures the quiet from the latest answer, never an older one.
  void leave(clock::time_point now) {
    const std::int64_t t = ns_of(now);
    std::int64_t latest = emptied_ns_.load(std::memory_order_acquire);
    while (t > latest && !emptied_ns_.compare_exchange_weak(latest, t, std::memory_order_acq_rel)) {
    }
    in_door_.fetch_sub(1, std::memory_order_acq_rel);
  }
  std::int64_t in_door() const { return in_door_.load(std::memory_order_relaxed); }

 private:
  static std::int64_t ns_of(clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  const std::int64_t quiet_ns_;
  std::atomic<std::int64_t> in_door_{0};
  std::atomic<std::int64_t> emptied_ns_{0};  // the latest answer's time
};

}  // namespace spindle::transport::kserve
