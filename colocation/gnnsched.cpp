#include "colocation/gnnsched.hpp"

#include <algorithm>
#include <deque>

#include "core/enum_names.hpp"

namespace spindle::colocation {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Shared tail of Algorithms 1 and 2: take tasks in `order`, advancing to a new
// group once the group's PMC passed gTH, or when the next task would overflow MA.
task_groups pack(const std::vector<sched_task>& order, std::uint64_t ma, std::uint64_t gth) {
  task_groups groups;
  std::uint64_t gpmc = ma;  // Alg. 1/2 line 3: forces a new group on the first task
  for (const sched_task& t : order) {
    if (gpmc > gth || gpmc + t.pmc > ma) {
      groups.emplace_back();
      gpmc = 0;
    }
    groups.back().push_back(t);
    gpmc += t.pmc;
  }
  return groups;
}

std::vector<sched_task> by_qt(std::vector<sched_task> q) {
  std::stable_sort(q.begin(), q.end(), [](const auto& a, const auto& b) { return a.qt < b.qt; });
  return q;
}

}  // namespace

constexpr enum_names<grouping_policy, 3> kGroupingPolicies{{{
    {grouping_policy::fifo, "fifo"}, {grouping_policy::sqtf, "sqtf"},
    {grouping_policy::bqt, "bqt"}}}};

std::string_view to_string(grouping_policy p) { return kGroupingPolicies.name(p); }

expected<grouping_policy> parse_grouping_policy(std::string_view text) {
  return kGroupingPolicies.parse(text, "grouping policy");
}

expected<task_groups> group_tasks(const std::vector<sched_task>& queue, std::uint64_t ma,
                                  grouping_policy policy) {
  std::uint64_t sp = 0;
  for (const auto& t : queue) {
    if (t.pmc > ma)
      return make_error(errc::resource_exhausted,
                        "task {}: PMC {} bytes exceeds the allocatable memory {} bytes", t.id,
                        t.pmc, ma);
    sp += t.pmc;
  }
  if (queue.empty()) return task_groups{};
  if (ma == 0) return make_error(errc::invalid_argument, "allocatable memory is 0");
  if (policy == grouping_policy::fifo) return pack(queue, ma, ma);  // pack while it fits
  const std::uint64_t gth = ceil_div(sp, ceil_div(sp, ma));
  auto sorted = by_qt(queue);
  if (policy == grouping_policy::sqtf) return pack(sorted, ma, gth);
  // BQT: odd iterations pop the right end (longest QT), even ones the left.
  std::deque<sched_task> dq(sorted.begin(), sorted.end());
  std::vector<sched_task> order;
  for (std::size_t i = 0; !dq.empty(); ++i) {
    if (i % 2 == 1) {
      order.push_back(dq.back());
      dq.pop_back();
    } else {
      order.push_back(dq.front());
      dq.pop_front();
    }
  }
  return pack(order, ma, gth);
}

}  // namespace spindle::colocation
