// GNNSched §3.4 task grouping: which queued inference tasks run together on one
// device so that their summed PMC never exceeds the allocatable memory MA.
// Policies: FIFO (baseline: arrival order, pack while it fits), SQTF (Alg. 1:
// ascending QT) and BQT (Alg. 2: ascending QT into a deque, alternately popping
// the left and right ends to mix short and long tasks), both with the group
// threshold gTH = ceil(SP / ceil(SP / MA)). The papers' pseudo-code can overshoot
// MA (it checks gPMC > gTH only before adding); we also start a new group when
// adding a task would exceed MA. QT = 2 x solo time. Pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::colocation {

struct sched_task {
  std::uint64_t id = 0;
  std::uint64_t pmc = 0;  // bytes (estimate_pmc().pmc_bytes)
  double qt = 0;          // QoS target, seconds (2 x solo time)
};

enum class grouping_policy { fifo, sqtf, bqt };
std::string_view to_string(grouping_policy p);
expected<grouping_policy> parse_grouping_policy(std::string_view text);

using task_groups = std::vector<std::vector<sched_task>>;

/// Groups `queue` (in arrival order) for a device with `ma` allocatable bytes.
/// Fails with errc::resource_exhausted naming the task whose PMC alone exceeds MA.
expected<task_groups> group_tasks(const std::vector<sched_task>& queue, std::uint64_t ma,
                                  grouping_policy policy);

}  // namespace spindle::colocation
