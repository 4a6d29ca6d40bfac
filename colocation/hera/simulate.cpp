#include "colocation/hera/simulate.hpp"

#include <algorithm>
#include <random>

#include "core/enum_names.hpp"

namespace spindle::colocation::hera {
namespace {

struct cluster {
  const profile_table& t;
  std::map<std::string, double> serviced;
  std::size_t servers = 0;
  double emu = 0;

  void add(const std::string& a, double qa) {
    ++servers;
    serviced[a] += qa;
    emu += qa / isolated_qps(t.models.at(a), t.machine);
  }
  void add(const std::string& a, const std::string& b) {
    const auto [qa, qb] = colocated_qps(t.models.at(a), t.models.at(b), t.machine);
    ++servers;
    serviced[a] += qa;
    serviced[b] += qb;
    emu +=
        qa / isolated_qps(t.models.at(a), t.machine) + qb / isolated_qps(t.models.at(b), t.machine);
  }
  bool short_of(const std::string& m, const std::map<std::string, double>& targets) {
    return serviced[m] < targets.at(m);
  }
};

// Fills what is still short with servers of one model each.
void isolate_rest(cluster& c, const std::map<std::string, double>& targets) {
  for (const auto& [m, q] : targets)
    while (c.short_of(m, targets)) c.add(m, isolated_qps(c.t.models.at(m), c.t.machine));
}

}  // namespace

constexpr enum_names<selection, 4> kSelections{{{
    {selection::hera, "Hera"}, {selection::hera_random, "Hera-Random"},
    {selection::random, "Random"}, {selection::isolation, "DeepRecSys (isolation)"}}}};

std::string_view to_string(selection s) { return kSelections.name(s); }

expected<simulation> simulate(const profile_table& t, const std::map<std::string, double>& targets,
                              selection policy, std::uint64_t seed, double min_gain) {
  if (policy == selection::hera) {
    SPINDLE_ASSIGN_OR_RETURN(auto plan, plan_cluster(t, targets, min_gain));
    double emu = 0;
    for (const auto& s : plan.servers) emu += s.emu;
    return simulation{policy, plan.servers.size(),
                      plan.servers.empty() ? 0 : emu / double(plan.servers.size())};
  }
  for (const auto& [m, q] : targets) {
    auto it = t.models.find(m);
    if (it == t.models.end())
      return make_error(errc::invalid_argument, "target for '{}': no such model in the profiles",
                        m);
    if (q > 0 && isolated_qps(it->second, t.machine) <= 0)
      return make_error(errc::invalid_argument, "'{}' serves 0 QPS on this machine", m);
  }
  cluster c{t, {}, 0, 0};
  std::mt19937_64 rng(seed);
  std::vector<std::string> all, high;
  for (const auto& [m, _] : targets) {
    all.push_back(m);
    if (worker_scalability(t.models.at(m), t.machine.cores, min_gain) == scalability::high)
      high.push_back(m);
  }
  if (policy == selection::hera_random) {
    for (const auto& m : all) {
      if (std::find(high.begin(), high.end(), m) != high.end() || high.empty()) continue;
      while (c.short_of(m, targets)) {
        const auto& partner =
            high[std::uniform_int_distribution<std::size_t>(0, high.size() - 1)(rng)];
        if (colocated_qps(t.models.at(m), t.models.at(partner), t.machine).first <= 0) break;
        c.add(m, partner);
      }
    }
  } else if (policy == selection::random && all.size() > 1) {
    for (;;) {
      std::vector<std::string> short_ones;
      for (const auto& m : all)
        if (c.short_of(m, targets)) short_ones.push_back(m);
      if (short_ones.empty()) break;
      const auto& m =
          short_ones[std::uniform_int_distribution<std::size_t>(0, short_ones.size() - 1)(rng)];
      std::string partner = m;
      while (partner == m)
        partner = all[std::uniform_int_distribution<std::size_t>(0, all.size() - 1)(rng)];
      if (colocated_qps(t.models.at(m), t.models.at(partner), t.machine).first <= 0) break;
      c.add(m, partner);
    }
  }
  isolate_rest(c, targets);
  return simulation{policy, c.servers, c.servers ? c.emu / double(c.servers) : 0};
}

std::map<std::string, double> targets_for(const profile_table& t,
                                          const std::map<std::string, double>& mix,
                                          std::size_t servers) {
  double total = 0;
  for (const auto& [_, w] : mix) total += w;
  std::map<std::string, double> out;
  for (const auto& [m, w] : mix) {
    auto it = t.models.find(m);
    if (it == t.models.end() || total <= 0) continue;
    out[m] = double(servers) * (w / total) * isolated_qps(it->second, t.machine);
  }
  return out;
}

}  // namespace spindle::colocation::hera
