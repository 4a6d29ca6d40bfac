// Admission control sized from a latency objective (SLO): by Little's law a
// model whose calls in flight stay under capacity x wait budget keeps each
// call's time in the server near that budget, so a call is admitted while
// in_flight < limit = clamp(capacity_rps x slo x queue_share, floor, max_queue)
// and answered `overloaded` at once otherwise. Capacity is measured, not set:
// the completion rate over 100 ms windows (see roll() for how it is tracked).
// Pure logic, thread-safe (atomics; one mutex taken by one thread per window).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>

#include "core/thread_annotations.hpp"

namespace spindle::serving {

struct admission_options {
  /// End-to-end latency objective of the model's calls (0: no SLO, limit = max_queue).
  std::chrono::microseconds slo{30000};
  /// Share of the SLO a call may spend in the server by Little's law; the rest
  /// is left for the tail (a p99 is well above the mean) and the network.
  double queue_share = 0.5;
  /// Hard cap on calls in flight, whatever the measured capacity.
  std::size_t max_queue = 1024;
  /// The limit never falls below this (e.g. two full batches), so a cold or
  /// idle model still fills its pipelines before capacity is known.
  std::size_t floor = 128;
  std::chrono::milliseconds window{100};
  /// A window with fewer completions (and no refusal) says nothing of capacity:
  /// one warm-up call in an idle second is not a rate the model can sustain.
  std::size_t min_window_calls = 8;
};

class admission_control {
 public:
  using clock = std::chrono::steady_clock;
  explicit admission_control(admission_options o = {});

  /// Counts the call in flight and returns true, or returns false (the caller
  /// answers `overloaded`) when in_flight has reached the limit.
  bool try_admit();
  /// An admitted call was answered (any status); may close a window.
  void complete(clock::time_point now = clock::now());

  std::size_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  std::size_t limit() const { return limit_.load(std::memory_order_relaxed); }
  /// Measured completions per second at capacity (0 until a window had
  /// min_window_calls completions or a refusal).
  double capacity_rps() const;
  std::uint64_t refused() const { return refused_total_.load(std::memory_order_relaxed); }

  /// Live tunables; each recomputes the limit at once.
  void set_slo(std::chrono::microseconds slo);
  void set_max_queue(std::size_t max_queue);
  void set_floor(std::size_t floor);
  admission_options options() const;

 private:
  void roll(clock::time_point now) SPINDLE_REQUIRES(mu_);
  void recompute_limit() SPINDLE_REQUIRES(mu_);

  std::atomic<std::size_t> in_flight_{0};
  std::atomic<std::size_t> limit_;
  std::atomic<std::uint64_t> done_in_window_{0}, refused_in_window_{0}, refused_total_{0};
  std::atomic<std::int64_t>
      window_end_ns_;  // clock ticks; the window closes at the first completion past it
  mutable spindle::mutex mu_;
  admission_options o_ SPINDLE_GUARDED_BY(mu_);
  clock::time_point window_start_ SPINDLE_GUARDED_BY(mu_);
  double capacity_ SPINDLE_GUARDED_BY(mu_) = 0;
};

}  // namespace spindle::serving
