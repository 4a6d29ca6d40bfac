#include "colocation/hera/colocation.hpp"

#include <algorithm>

namespace spindle::colocation::hera {
namespace {

int half(int cores) { return std::max(1, cores / 2); }

}  // namespace

std::string_view to_string(scalability s) { return s == scalability::high ? "high" : "low"; }

scalability worker_scalability(const model_profile& m, int cores, double min_gain) {
  if (m.max_workers() < cores || cores < 2) return scalability::low;
  const double lower = m.at(half(cores), m.ways()), upper = m.at(cores, m.ways());
  if (lower <= 0) return scalability::low;
  return (upper - lower) / lower >= min_gain ? scalability::high : scalability::low;
}

affinity co_location_affinity(const model_profile& a, const model_profile& b,
                              const machine_profile& m) {
  affinity r;
  const int w = half(m.cores), ways = m.llc_ways;
  if (ways > 1) {
    r.llc = 0;
    const double full_a = a.at(w, ways), full_b = b.at(w, ways);
    for (int i = 1; i <= ways - 1; ++i) {
      const double na = full_a > 0 ? a.at(w, i) / full_a : 0;
      const double nb = full_b > 0 ? b.at(w, ways - i) / full_b : 0;
      const double t = (na + nb) / 2;
      if (t > r.llc) {
        r.llc = t;
        r.ways_a = i;
        r.ways_b = ways - i;
      }
    }
  } else {
    r.ways_a = r.ways_b = ways;
  }
  const auto bw = [&](const model_profile& p) {
    return p.mem_bw_gbps.empty() ? 0.0
                                 : p.mem_bw_gbps[std::size_t(std::min(w, p.max_workers()) - 1)];
  };
  const double demand = bw(a) + bw(b);
  r.dram = demand > 0 ? std::min(m.mem_bw_gbps / demand, 1.0) : 1.0;
  r.system = std::min(r.llc, r.dram);
  return r;
}

std::pair<double, double> colocated_qps(const model_profile& a, const model_profile& b,
                                        const machine_profile& m) {
  const affinity f = co_location_affinity(a, b, m);
  const int w = half(m.cores);
  return {a.at(w, f.ways_a) * f.dram, b.at(w, f.ways_b) * f.dram};
}

double isolated_qps(const model_profile& m, const machine_profile& machine) {
  double best = 0;
  for (int w = 1; w <= std::min(machine.cores, m.max_workers()); ++w)
    best = std::max(best, m.at(w, m.ways()));
  return best;
}

expected<cluster_plan> plan_cluster(const profile_table& t,
                                    const std::map<std::string, double>& target_qps,
                                    double min_gain) {
  cluster_plan plan;
  std::vector<std::string> low, high;
  for (const auto& [name, target] : target_qps) {
    auto it = t.models.find(name);
    if (it == t.models.end())
      return make_error(errc::invalid_argument, "target for '{}': no such model in the profiles",
                        name);
    if (!(target >= 0))
      return make_error(errc::invalid_argument, "target for '{}': {} QPS", name, target);
    if (target > 0 && isolated_qps(it->second, t.machine) <= 0)
      return make_error(errc::invalid_argument,
                        "'{}' meets its SLA at no load on this machine (profiled QPS 0)", name);
    const auto s = worker_scalability(it->second, t.machine.cores, min_gain);
    plan.classes[name] = s;
    plan.serviced[name] = 0;
    (s == scalability::low ? low : high).push_back(name);
  }
  const auto& models = t.models;
  auto add_server = [&](std::vector<std::string> names, std::vector<double> qps) {
    server_plan s{std::move(names), std::move(qps), 0};
    for (std::size_t i = 0; i < s.models.size(); ++i) {
      plan.serviced[s.models[i]] += s.qps[i];
      s.emu += s.qps[i] / isolated_qps(models.at(s.models[i]), t.machine);
    }
    plan.servers.push_back(std::move(s));
  };
  // Step A: low-scalability models, each beside its best high-scalability partner.
  for (const auto& mi : low) {
    const auto& pi = models.at(mi);
    std::string best;
    double best_aff = -1;
    for (const auto& mj : high) {
      const double a = co_location_affinity(pi, models.at(mj), t.machine).system;
      if (a > best_aff) best_aff = a, best = mj;
    }
    const auto [qi, qj] = best.empty() ? std::pair{isolated_qps(pi, t.machine), 0.0}
                                       : colocated_qps(pi, models.at(best), t.machine);
    if (qi <= 0)
      return make_error(errc::invalid_argument, "'{}' serves 0 QPS beside '{}'", mi, best);
    while (plan.serviced[mi] < target_qps.at(mi)) {
      if (best.empty())
        add_server({mi}, {qi});
      else
        add_server({mi, best}, {qi, qj});
    }
  }
  // Step B: high-scalability models alone, with all workers.
  for (const auto& m : high) {
    const double q = isolated_qps(models.at(m), t.machine);
    while (plan.serviced[m] < target_qps.at(m)) add_server({m}, {q});
  }
  return plan;
}

int find_number_of_workers(const model_profile& m, double traffic, int ways, int max_workers) {
  const int top = std::max(1, std::min(max_workers, m.max_workers()));
  int best = 1;
  for (int w = 1; w <= top; ++w) {
    if (m.at(w, ways) >= traffic) return w;
    if (m.at(w, ways) > m.at(best, ways)) best = w;
  }
  return best;
}

int adjust_workers(const model_profile& m, double tail_ms, double traffic_qps, int current,
                   int ways, int max_workers, slack_band band) {
  const double slack = tail_ms / m.sla_ms;
  if (slack >= band.low && slack <= band.high) return current;
  const double urgency = std::max(1.0, slack);
  return find_number_of_workers(m, urgency * traffic_qps, ways, max_workers);
}

std::pair<int, int> best_llc_partition(const model_profile& a, int workers_a,
                                       const model_profile& b, int workers_b, int ways) {
  if (ways <= 1) return {ways, ways};
  std::pair<int, int> best{1, ways - 1};
  double highest = -1;
  for (int i = 1; i <= ways - 1; ++i) {
    const double q = a.at(workers_a, i) + b.at(workers_b, ways - i);
    if (q > highest) highest = q, best = {i, ways - i};
  }
  return best;
}

}  // namespace spindle::colocation::hera
