#include "colocation/hera/manager.hpp"

#include <algorithm>

namespace spindle::colocation::hera {

std::string_view to_string(manager_policy p) {
  return p == manager_policy::hera ? "hera" : "parties";
}

expected<manager_policy> parse_manager_policy(std::string_view text) {
  if (text == "hera") return manager_policy::hera;
  if (text == "parties") return manager_policy::parties;
  return make_error(errc::invalid_argument, "node manager '{}': expected hera or parties", text);
}

int decide_workers(manager_policy p, const model_profile* profile, const manager_settings& s,
                   const model_window& w) {
  const int top = std::max(1, s.max_workers);
  if (w.answers == 0 || !(s.sla_ms > 0)) return std::clamp(w.workers, 1, top);
  const double slack = w.tail_ms / s.sla_ms;
  if (p == manager_policy::hera && profile) {
    model_profile sized = *profile;
    sized.sla_ms = s.sla_ms;
    return std::clamp(
        adjust_workers(sized, w.tail_ms, w.traffic_qps, w.workers, sized.ways(), top, s.band), 1,
        top);
  }
  int next = w.workers;
  if (slack > s.band.high) ++next;
  if (slack < s.band.low) --next;
  return std::clamp(next, 1, top);
}

}  // namespace spindle::colocation::hera
