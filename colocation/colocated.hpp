// GNNSched §3.2 co-located execution: the tasks of one group each get a buffer
// from the device's memory pool (contiguous offsets) and run concurrently (host:
// the pool's worker threads; CUDA: one stream each), then the pool is cleared.
// While a group runs, the caller prepares the next group's inputs (pipelining).
// One scheduler thread drives a runner.
#pragma once

#include <functional>
#include <future>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "gpu/memory_pool.hpp"

namespace spindle::colocation {

/// One task of a group: its buffer size and the work to run inside that buffer
/// (and, on a GPU, on the slot's stream: task i of a group on lane i's stream).
struct colocated_job {
  std::uint64_t buffer_bytes = 0;
  std::function<status(gpu::pool_slot)> run;
};

class colocated_runner {
 public:
  colocated_runner(gpu::memory_pool& pool, thread_pool& workers) : pool_(pool), workers_(workers) {}

  /// Starts a group: inserts every buffer, then runs the jobs concurrently. With
  /// `check_memory` false (the "run all at once" baseline) a job whose buffer does
  /// not fit fails with errc::resource_exhausted instead of the group being refused.
  /// The future yields one status per job; the pool is cleared when all finish.
  std::future<std::vector<status>> start(std::vector<colocated_job> jobs, bool check_memory = true);

 private:
  gpu::memory_pool& pool_;
  thread_pool& workers_;
};

}  // namespace spindle::colocation
