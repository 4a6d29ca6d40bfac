// Compute threads (pipelines, thread pools, GNNSched) run at a lower CPU
// priority than the threads that move requests (the Cap'n Proto front door,
// CAF's scheduler, the batcher), so that on a saturated machine a request is
// still read and admitted or refused at once instead of queueing behind batches.
#pragma once

namespace spindle {

/// The nice value compute threads take (Linux CFS: weight 110 against 1024 at
/// nice 0, so a ready request-moving thread gets ~90% of a contended core).
inline constexpr int kComputeNice = 10;

/// Lowers the calling thread to compute priority (nice kComputeNice). Raising a
/// thread's nice value needs no privilege; a failure is logged once and ignored.
void lower_to_compute_priority();

/// The calling thread's nice value (for tests and stats).
int current_thread_nice();

}  // namespace spindle
