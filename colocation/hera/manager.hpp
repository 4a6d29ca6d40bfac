// The node resource manager's decision (Hera §VI-C, Algorithm 3) and the
// PARTIES-style baseline it is compared with: given one model's last
// monitoring window (tail latency, arrival rate, workers), how many workers
// it should have next. Pure functions; the periodic loop lives in the actors.
#pragma once

#include <string_view>

#include "colocation/hera/colocation.hpp"
#include "core/status.hpp"

namespace spindle::colocation::hera {

enum class manager_policy { hera, parties };
std::string_view to_string(manager_policy p);
expected<manager_policy> parse_manager_policy(std::string_view text);

/// One model's last T_monitor.
struct model_window {
  double tail_ms = 0;       // the SLA percentile of the answers in the window
  double traffic_qps = 0;   // arrivals per second in the window
  int workers = 1;          // workers now
  std::size_t answers = 0;  // answers the tail is over (0: no evidence, no change)
};

struct manager_settings {
  double sla_ms = 0;
  slack_band band;
  int max_workers = 1;  // the cores this model may use
};

/// Hera: Algorithm 3's adjust_workers over the model's profile (one LLC way
/// column unless resctrl exists). PARTIES-style: no profile; one worker more
/// when slack > band.high, one fewer when slack < band.low. Both keep the
/// workers when the window holds no answer, and stay in 1..max_workers.
int decide_workers(manager_policy p, const model_profile* profile, const manager_settings& s,
                   const model_window& w);

}  // namespace spindle::colocation::hera
