#include "runtime/cluster_launch.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include "config/topology.hpp"
#include "core/signals.hpp"
#include "runtime/launched_ranks.hpp"
#include "runtime/plan_servers.hpp"
#include "runtime/cluster_token.hpp"

namespace spindle::runtime {
namespace {

// The flags of a rank with a door: the recommendation models as given, with
// its own PDB (RocksDB allows one process per directory), the forwards to the
// plan servers and the Admin token file.
void add_door_flags(std::vector<std::string>& argv, const launch_args& a, std::size_t rank,
                    const std::vector<std::string>& forwards) {
  argv.insert(argv.end(), a.rec.begin(), a.rec.end());
  if (!a.pdb.empty()) argv.insert(argv.end(), {"--pdb", fmt::format("{}/rank-{}", a.pdb, rank)});
  argv.insert(argv.end(), forwards.begin(), forwards.end());
  if (!a.admin_token_file.empty())
    argv.insert(argv.end(), {"--admin-token-file", a.admin_token_file});
}

// The `spindle node` command line of rank `r` under `spindle launch`.
std::vector<std::string> node_argv(const std::string& exe, const launch_args& a, std::size_t r,
                                   std::size_t ranks, const std::string& door,
                                   const std::vector<std::string>& forwards) {
  std::vector<std::string> argv = {exe, "node", "--config", a.config, "--rank", std::to_string(r)};
  if (!a.dataset.empty()) argv.insert(argv.end(), {"--dataset", a.dataset});
  if (!a.model.empty()) argv.insert(argv.end(), {"--model", a.model});
  argv.insert(argv.end(), a.serving.begin(), a.serving.end());
  if (!a.files.empty()) argv.insert(argv.end(), {r == 0 ? "--files" : "--fetch-from", a.files});
  if (r != 0 && !door.empty()) {  // the TOML's door for this rank
    argv.insert(argv.end(), {"--listen", door});
    add_door_flags(argv, a, r, forwards);
  }
  if (r == 0 && !a.listen.empty()) {
    argv.insert(argv.end(), {"--listen", a.listen, "--expect", std::to_string(ranks - 1)});
    add_door_flags(argv, a, r, forwards);
    if (a.replan_drift > 0)
      argv.insert(argv.end(), {"--replan-drift", fmt::format("{}", a.replan_drift)});
    if (!a.metrics.empty()) argv.insert(argv.end(), {"--metrics", a.metrics});
    if (!a.http.empty()) argv.insert(argv.end(), {"--http", a.http});
    if (!a.grpc.empty()) argv.insert(argv.end(), {"--grpc", a.grpc});
    if (!a.calibration.empty()) argv.insert(argv.end(), {"--calibration", a.calibration});
    if (!a.calibration_out.empty())
      argv.insert(argv.end(), {"--calibration-out", a.calibration_out});
    if (!a.policy.empty()) argv.insert(argv.end(), {"--policy", a.policy});
  }
  return argv;
}

// Starts rank `r` here, or on its host through the TOML's launcher, or (with no
// launcher) prints the command to start it there with. The rank gets the
// cluster token in its environment (SPINDLE_CLUSTER_TOKEN), never in a file.
status start_rank(std::vector<launched_rank>& ranks, const config::topology& topo, std::size_t r,
                  std::vector<std::string> argv, const std::string& token) {
  const std::string& host = topo.servers[r].host;
  std::string label = fmt::format("rank {}", r);
  if (!is_this_machine(host)) {
    if (topo.launcher.empty()) {
      std::string cmd = "spindle";
      for (std::size_t i = 1; i < argv.size(); ++i) cmd += " " + argv[i];
      fmt::print("rank {} runs on {}: start it there, with {} set to this cluster's token, "
                 "with\n  {}\n",
                 r, host, kClusterTokenEnv, cmd);
      return status::ok();
    }
    // Through the TOML's launcher (ssh, ip netns exec, ...): its output relayed,
    // signals forwarded to it, restarted with --restart like a local rank.
    argv = launcher_argv(topo.launcher, host, int(r), argv);
    label = fmt::format("rank {}@{}", r, host);
    fmt::print("rank {} on {}: {}\n", r, host, argv.back());
  }
  return spawn_rank(ranks, int(r), label, std::move(argv),
                    {fmt::format("{}={}", kClusterTokenEnv, token)});
}

}  // namespace

status run_launch(const launch_args& a) {
  const std::string& path = a.config;
  sigset_t set = stop_signal_set();
  wait_for_signals_here(set);
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(path));
  if (!a.listen.empty() && (a.dataset.empty() || a.model.empty()))
    return make_error(errc::invalid_argument, "launch: --listen needs --dataset and --model");
  // Handed to launch (--token-file, SPINDLE_CLUSTER_TOKEN), else the TOML's
  // file on this host (created if absent; `cluster-status` here reads it).
  SPINDLE_ASSIGN_OR_RETURN(const auto token,
                           cluster_token(a.token_file, topo.token_file, true, 0));
  char exe[4096] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0)
    return make_error(errc::io_error, "launch: cannot find the spindle binary");
  std::vector<launched_rank> ranks;
  // Hera's plan servers first: every rank's door forwards their models to them.
  plan_routes routes;
  SPINDLE_TRY(launch_plan_servers(exe, topo, path, ranks, routes));
  const auto forwards = forward_flags(routes);
  for (std::size_t r = 0; r < topo.servers.size(); ++r)
    SPINDLE_TRY(start_rank(
        ranks, topo, r, node_argv(exe, a, r, topo.servers.size(), topo.servers[r].door, forwards),
        token));
  return supervise(ranks, set, a.restart);
}

}  // namespace spindle::runtime
