// How Spindle's serving processes configure CAF's scheduler. One worker thread:
// blocking work runs on detached actors and Spindle's own pools (docs/architecture.md "CPU
// habits": own every thread). The "sharing" policy: an idle worker sleeps on a
// condition variable and wakes on the next message, where work-stealing's
// polling backoff (50 us naps, then 10 ms) added about 100 us per actor hop on
// 2 cores. bench/serving_bench measured the actor tax at batch 1 going from
// 50-54% to 4-38% with it. SPINDLE_CAF_STEALING=1 restores work-stealing to compare.
#pragma once

#include <caf/all.hpp>
#include <cstdlib>

namespace spindle::actors {

inline void configure_scheduler(caf::actor_system_config& cfg, int threads = 1) {
  cfg.set("scheduler.max-threads", threads);
  if (!std::getenv("SPINDLE_CAF_STEALING")) cfg.set("scheduler.policy", caf::atom("sharing"));
}

}  // namespace spindle::actors
