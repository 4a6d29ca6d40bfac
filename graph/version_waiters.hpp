// Calls that asked for a graph version not applied yet (min_version), parked
// until it is or until their deadline: `wait` registers a callback, `reached`
// (called by the graph's writer after it publishes a version) runs those now
// satisfied, and a timer thread, started with the first waiter, runs the
// expired ones with `false`. Callbacks run on the writer's or the timer's
// thread, never under the lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace spindle::graph {

class version_waiters {
 public:
  using clock = std::chrono::steady_clock;
  /// ready(true): the version was reached; ready(false): the deadline passed.
  using ready_fn = std::function<void(bool)>;

  version_waiters() = default;
  ~version_waiters();
  version_waiters(const version_waiters&) = delete;
  version_waiters& operator=(const version_waiters&) = delete;

  /// Runs `ready(true)` once reached(v') with v' >= version, or ready(false) at
  /// `deadline`. `now_version`: the version published now (checked under the
  /// lock, so a version published meanwhile is not missed).
  void wait(std::uint64_t version, clock::time_point deadline,
            const std::function<std::uint64_t()>& now_version, ready_fn ready);
  /// The graph now holds `version`: runs every waiter it satisfies.
  void reached(std::uint64_t version);
  /// Runs every waiter with `false` now (their server is going away).
  void cancel_all();
  std::size_t waiting() const;

 private:
  struct waiter {
    std::uint64_t version;
    ready_fn ready;
  };
  void run_timer();

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::multimap<clock::time_point, waiter> by_deadline_;
  bool stop_ = false;
  std::thread timer_;
};

}  // namespace spindle::graph
