// A fixed pool of named worker threads ("spindle-pool-N") for data-parallel
// work: parallel_for over an index range with the caller participating.
// Thread-safe: submit and parallel_for may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace spindle {

class thread_pool {
 public:
  /// Starts `workers` threads named "<name>-<i>"; 0 means one per hardware core.
  explicit thread_pool(std::size_t workers = 0, std::string name = "spindle-pool");
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Number of worker threads.
  std::size_t size() const { return threads_.size(); }
  /// Number of distinct participant slots parallel_for hands out (workers + caller).
  std::size_t slots() const { return threads_.size() + 1; }

  /// Queues `task` to run on a worker.
  void submit(std::function<void()> task);

  /// Marks one unit of work (a served batch) running on the cores this pool
  /// serves, until the token is destroyed. `occupied()` counts the tokens
  /// alive: once there are slots() of them, every core already has a unit of
  /// work, and splitting another across the pool only adds hand-offs.
  class occupancy {
   public:
    explicit occupancy(thread_pool& p) : p_(&p) { p.occupied_.fetch_add(1); }
    ~occupancy() {
      if (p_) p_->occupied_.fetch_sub(1);
    }
    occupancy(occupancy&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    occupancy(const occupancy&) = delete;
    occupancy& operator=(const occupancy&) = delete;
    occupancy& operator=(occupancy&&) = delete;

   private:
    thread_pool* p_;
  };
  occupancy occupy() { return occupancy(*this); }
  std::size_t occupied() const { return occupied_.load(std::memory_order_relaxed); }

  /// Calls fn(chunk_begin, chunk_end, slot) over [begin, end) in chunks of `grain`
  /// and returns when every chunk is done. The caller runs chunks too. Within one
  /// call each participant has its own slot in [0, slots()), so per-slot scratch
  /// needs no lock.
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t, std::size_t)>& fn);

 private:
  void worker_loop();

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::atomic<std::size_t> occupied_{0};     // occupancy tokens alive
};

/// Number of cores this process may use (sched_getaffinity, at least 1).
std::size_t available_cores();

}  // namespace spindle
