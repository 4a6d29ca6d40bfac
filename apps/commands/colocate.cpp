// `spindle colocate`: Hera's cluster-level decisions over a profile table
// (from `spindle profile`, or written by hand in the same JSON):
//   affinity   Algorithm 1 for every model pair, with each model's worker scalability
//   plan       Algorithm 2 for target QPS per model: the servers, their model pairs,
//              the expected QPS and EMU, beside one-model-per-server isolation
//   simulate   servers needed and mean EMU of Hera, Hera-Random, Random and
//              isolation for clusters of 1..1000 servers (Hera Figs. 11, 15)
#include <fmt/ranges.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "apps/commands/command.hpp"
#include "colocation/hera/colocation.hpp"
#include "colocation/hera/simulate.hpp"

namespace spindle::apps {
namespace {

namespace hera = colocation::hera;

struct colocate_args {
  std::string profiles;
  std::vector<std::string> targets;  // model=QPS
  double min_gain = hera::kDefaultMinGain;
  bool json = false;
  std::vector<std::size_t> servers{1, 10, 100, 1000};  // simulate: cluster sizes
  std::uint64_t seed = 1;
};

expected<std::map<std::string, double>> parse_targets(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    double q = -1;
    if (eq != std::string::npos) {
      const char* b = item.data() + eq + 1;
      auto [p, ec] = std::from_chars(b, item.data() + item.size(), q);
      if (ec != std::errc() || p != item.data() + item.size()) q = -1;
    }
    if (eq == std::string::npos || eq == 0 || q < 0)
      return make_error(errc::invalid_argument, "--targets '{}': expected MODEL=QPS (QPS >= 0)",
                        item);
    out[item.substr(0, eq)] = q;
  }
  if (out.empty()) return make_error(errc::invalid_argument, "--targets: give MODEL=QPS,...");
  return out;
}

status run_affinity(const colocate_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto t, hera::load_profile_table(a.profiles));
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json)
    fmt::print("{} cores, {} LLC ways, {:.1f} GB/s\n{:<14} {:<14} {:>6} {:>6} {:>7} {:>9}\n",
               t.machine.cores, t.machine.llc_ways, t.machine.mem_bw_gbps, "model A", "model B",
               "LLC", "DRAM", "system", "ways A:B");
  for (auto i = t.models.begin(); i != t.models.end(); ++i)
    for (auto j = std::next(i); j != t.models.end(); ++j) {
      const auto f = hera::co_location_affinity(i->second, j->second, t.machine);
      if (a.json) {
        rows.push_back({{"a", i->first},
                        {"b", j->first},
                        {"llc", f.llc},
                        {"dram", f.dram},
                        {"system", f.system},
                        {"ways_a", f.ways_a},
                        {"ways_b", f.ways_b}});
      } else {
        fmt::print("{:<14} {:<14} {:>6.3f} {:>6.3f} {:>7.3f} {:>5}:{}\n", i->first, j->first, f.llc,
                   f.dram, f.system, f.ways_a, f.ways_b);
      }
    }
  nlohmann::json classes;
  for (const auto& [n, m] : t.models)
    classes[n] =
        std::string(hera::to_string(hera::worker_scalability(m, t.machine.cores, a.min_gain)));
  if (a.json) {
    fmt::print("{}\n", nlohmann::json{{"pairs", rows}, {"scalability", classes}}.dump(2));
    return status::ok();
  }
  fmt::print("worker scalability:");
  for (const auto& [n, c] : classes.items()) fmt::print(" {}={}", n, c.get<std::string>());
  fmt::print("\n");
  return status::ok();
}

status run_plan(const colocate_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto t, hera::load_profile_table(a.profiles));
  SPINDLE_ASSIGN_OR_RETURN(auto targets, parse_targets(a.targets));
  SPINDLE_ASSIGN_OR_RETURN(auto plan, hera::plan_cluster(t, targets, a.min_gain));
  // The baseline users run today (DeepRecSys-style): every model on servers of its own.
  std::size_t isolated = 0;
  for (const auto& [name, q] : targets) {
    const double per = hera::isolated_qps(t.models.at(name), t.machine);
    isolated += std::size_t(std::ceil(q / per));
  }
  double emu = 0;
  for (const auto& s : plan.servers) emu += s.emu;
  emu = plan.servers.empty() ? 0 : emu / double(plan.servers.size());
  if (a.json) {
    nlohmann::json servers = nlohmann::json::array();
    for (const auto& s : plan.servers)
      servers.push_back({{"models", s.models}, {"qps", s.qps}, {"emu", s.emu}});
    nlohmann::json classes;
    for (const auto& [n, c] : plan.classes) classes[n] = std::string(hera::to_string(c));
    fmt::print("{}\n", nlohmann::json{{"servers", servers},
                                      {"serviced_qps", plan.serviced},
                                      {"scalability", classes},
                                      {"mean_emu", emu},
                                      {"isolated_servers", isolated}}
                           .dump(2));
    return status::ok();
  }
  fmt::print("{:>6}  {:<28} {:<22} {:>6}\n", "server", "models", "expected QPS", "EMU");
  for (std::size_t i = 0; i < plan.servers.size(); ++i) {
    const auto& s = plan.servers[i];
    std::vector<std::string> q;
    for (double x : s.qps) q.push_back(fmt::format("{:.0f}", x));
    fmt::print("{:>6}  {:<28} {:<22} {:>5.0f}%\n", i, fmt::format("{}", fmt::join(s.models, " + ")),
               fmt::format("{}", fmt::join(q, " + ")), s.emu * 100);
  }
  for (const auto& [name, q] : targets)
    fmt::print("{}: target {:.0f} QPS, planned {:.0f} ({} scalability)\n", name, q,
               plan.serviced.at(name), hera::to_string(plan.classes.at(name)));
  fmt::print("Hera: {} servers, mean EMU {:.0f}%; one model per server: {} servers, EMU 100%\n",
             plan.servers.size(), emu * 100, isolated);
  return status::ok();
}

status run_simulate(const colocate_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto t, hera::load_profile_table(a.profiles));
  SPINDLE_ASSIGN_OR_RETURN(auto mix, parse_targets(a.targets));
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json)
    fmt::print("{:>9}  {:<24} {:>8} {:>9} {:>14}\n", "isolated", "policy", "servers", "mean EMU",
               "vs isolation");
  for (std::size_t n : a.servers) {
    const auto targets = hera::targets_for(t, mix, n);
    std::size_t base = 0;
    for (auto p : {hera::selection::isolation, hera::selection::hera, hera::selection::hera_random,
                   hera::selection::random}) {
      SPINDLE_ASSIGN_OR_RETURN(auto r, hera::simulate(t, targets, p, a.seed, a.min_gain));
      if (p == hera::selection::isolation) base = r.servers;
      if (a.json) {
        rows.push_back({{"cluster", n},
                        {"policy", std::string(hera::to_string(p))},
                        {"servers", r.servers},
                        {"mean_emu", r.mean_emu}});
      } else {
        fmt::print("{:>9}  {:<24} {:>8} {:>8.0f}% {:>13.0f}%\n", n, hera::to_string(p), r.servers,
                   r.mean_emu * 100,
                   100.0 * double(r.servers) / double(std::max<std::size_t>(1, base)));
      }
    }
  }
  if (a.json) fmt::print("{}\n", rows.dump(2));
  return status::ok();
}

}  // namespace

void register_colocate(CLI::App& app, global_options&) {
  auto [cmd, a] = add_command<colocate_args>(
      app, "colocate", "Hera's co-location decisions over a profile table (spindle profile)");
  cmd->require_subcommand(1);
  auto common = [a](CLI::App* sub) {
    sub->add_option("--profiles", a->profiles, "Profile table (JSON from spindle profile)")
        ->required();
    add_bounded(*sub, "--min-gain", a->min_gain,
                "High worker scalability: QPS gain of the upper half of the workers, as a "
                "share of linear (Hera's curve slope)",
                0.0, 10.0);
    sub->add_flag("--json", a->json, "Print JSON");
  };
  auto* affinity = cmd->add_subcommand("affinity", "Algorithm 1 for every model pair");
  common(affinity);
  on_run(affinity, [a] { return run_affinity(*a); });
  auto* plan = cmd->add_subcommand(
      "plan", "Algorithm 2: servers, model pairs and expected QPS for target QPS per model");
  common(plan);
  plan->add_option("--targets", a->targets, "Target QPS per model: MODEL=QPS,...")
      ->delimiter(',')
      ->required();
  on_run(plan, [a] { return run_plan(*a); });
  auto* sim = cmd->add_subcommand(
      "simulate",
      "Servers needed and mean EMU of Hera, Hera-Random, Random and isolation for clusters of "
      "--servers isolated servers' worth of load, split by --mix");
  common(sim);
  sim->add_option("--mix", a->targets, "Share of the load per model: MODEL=WEIGHT,...")
      ->delimiter(',')
      ->required();
  sim->add_option("--servers", a->servers, "Cluster sizes (isolated servers' worth of load)")
      ->delimiter(',')
      ->capture_default_str();
  sim->add_option("--seed", a->seed, "Seed of the random policies")->capture_default_str();
  on_run(sim, [a] { return run_simulate(*a); });
}

}  // namespace spindle::apps
