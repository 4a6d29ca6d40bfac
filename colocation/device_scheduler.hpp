// GNNSched on the serving path: one scheduler per device that the inference
// tasks of every co-located model go through. A task states its buffer size
// (the PMC estimate of its forward pass) and QoS target; a scheduler thread
// repeatedly groups the waiting tasks with the grouping policy (FIFO, SQTF or
// BQT; colocation/gnnsched) so each group fits the device's memory pool, and runs
// the first group concurrently (colocation/colocated), each task inside its own
// buffer. Tasks that arrive meanwhile join the next grouping. The policy
// changes live. Thread-safe. submit() returns at once (the pipeline goes on
// sampling its next batch while the task waits for its group, so tasks of
// several pipelines and models meet in the queue and are co-located);
// run() is submit() plus a wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "colocation/colocated.hpp"
#include "colocation/gnnsched.hpp"
#include "core/thread_pool.hpp"
#include "gpu/memory_pool.hpp"

namespace spindle::colocation {

class device_scheduler {
 public:
  /// A pool of `pool_bytes` on `where` (a GPU's memory, or the host's); groups
  /// are launched from `workers`.
  static expected<std::unique_ptr<device_scheduler>> create(
      std::size_t pool_bytes, thread_pool& workers, grouping_policy policy,
      gpu::device_kind where = gpu::device_kind::host);
  ~device_scheduler();  // finishes the queued tasks, then stops

  /// A task's work, in its slot of the pool (on a GPU pool: device memory and
  /// the task's own stream).
  using work_fn = std::function<status(gpu::pool_slot slot)>;
  using done_fn = std::function<void(status)>;
  /// Queues a task of `bytes` with QoS target `qos_s` and returns; `done` gets
  /// its status once its group ran (on a scheduler thread; keep it short), or at
  /// once with resource_exhausted (naming the sizes) when `bytes` exceeds the
  /// whole pool, or unavailable when the scheduler is stopping.
  void submit(std::uint64_t bytes, double qos_s, work_fn work, done_fn done);
  /// submit() and wait for the status.
  status run(std::uint64_t bytes, double qos_s, work_fn work);

  void set_policy(grouping_policy p) { policy_.store(p); }
  grouping_policy policy() const { return policy_.load(); }
  std::size_t capacity() const { return pool_.capacity(); }
  gpu::device_kind where() const { return pool_.where(); }

  struct counters {
    std::uint64_t tasks = 0, groups = 0, largest_group = 0;
    std::uint64_t grouped_tasks = 0;  // tasks that ran in a group of 2 or more
    std::uint64_t overruns = 0;       // groups whose buffers exceeded the pool (must stay 0)
  };
  counters stats() const;

 private:
  struct task;
  device_scheduler(gpu::memory_pool pool, thread_pool& workers, grouping_policy policy);
  void loop();
  std::vector<std::shared_ptr<task>> next_group();

  gpu::memory_pool pool_;
  colocated_runner runner_;
  std::atomic<grouping_policy> policy_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<task>> queue_;  // arrival order; guarded by mu_
  counters counters_;                        // guarded by mu_
  std::uint64_t next_id_ = 0;                // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::thread thread_;                       // "gnnsched"
};

}  // namespace spindle::colocation
