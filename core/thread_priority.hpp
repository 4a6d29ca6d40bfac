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

/// The nice value background work takes (a graph compaction beside serving):
/// weight 15 against compute threads' 110, so it gets about an eighth of a
/// contended core and all of an idle one. (The idle scheduling class would
/// starve it for as long as serving keeps the cores busy, holding the delta's
/// memory meanwhile.)
inline constexpr int kBackgroundNice = 19;

/// Lowers the calling thread to background priority (nice kBackgroundNice).
void lower_to_background_priority();

/// The calling thread's nice value (for tests and stats).
int current_thread_nice();

}  // namespace spindle
