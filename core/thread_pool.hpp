// A fixed pool of named worker threads ("spindle-pool-N") for data-parallel
// work: parallel_for over an index range with the caller participating.
// Thread-safe: submit and parallel_for may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
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
};

/// Number of cores this process may use (sched_getaffinity, at least 1).
std::size_t available_cores();

}  // namespace spindle
