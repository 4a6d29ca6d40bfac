#include "runtime/cluster_launch.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <tuple>
#include <utility>

#include "config/topology.hpp"
#include "core/signals.hpp"
#include "runtime/cluster_token.hpp"
#include "runtime/launched_ranks.hpp"
#include "runtime/plan_servers.hpp"

namespace spindle::runtime {
namespace {

// The flags of a rank with a door: the recommendation models and door limits
// as given, with its own PDB (RocksDB allows one process per directory), the
// forwards to the plan servers, the Admin token file, and its KServe and
// metrics ports (rank 0: launch's flags, else the TOML's; others: the TOML's).
void add_door_flags(std::vector<std::string>& argv, const launch_args& a, std::size_t rank,
                    const config::server_spec& server, const std::vector<std::string>& forwards) {
  argv.insert(argv.end(), a.rec.begin(), a.rec.end());
  if (!a.pdb.empty()) argv.insert(argv.end(), {"--pdb", fmt::format("{}/rank-{}", a.pdb, rank)});
  argv.insert(argv.end(), forwards.begin(), forwards.end());
  if (!a.admin_token_file.empty())
    argv.insert(argv.end(), {"--admin-token-file", a.admin_token_file});
  const bool first = rank == 0;
  for (auto [flag, given, toml] :
       {std::tuple<const char*, const std::string&, const std::string&>{
            "--metrics", first ? a.metrics : server.metrics, server.metrics},
        {"--http", first ? a.http : server.http, server.http},
        {"--grpc", first ? a.grpc : server.grpc, server.grpc}}) {
    const std::string& at = given.empty() ? toml : given;
    if (!at.empty()) argv.insert(argv.end(), {flag, at});
  }
}

// A rank's KServe or metrics port in the TOML needs a door to serve on.
status check_door_ports(const config::topology& topo, const launch_args& a) {
  for (std::size_t r = 0; r < topo.servers.size(); ++r) {
    const auto& s = topo.servers[r];
    const bool door = r == 0 ? !a.listen.empty() : !s.door.empty();
    for (auto [key, value] : {std::pair<const char*, const std::string&>{"http", s.http},
                              {"grpc", s.grpc},
                              {"metrics", s.metrics}})
      if (!value.empty() && !door)
        return make_error(errc::invalid_argument,
                          "{}: server {} ({}) has {} = '{}' but no door to serve it on ({})",
                          a.config, r, s.name, key, value,
                          r == 0 ? "give launch --listen" : "add door = \"HOST:PORT\"");
  }
  return status::ok();
}

// The `spindle node` command line of rank `r` under `spindle launch`.
std::vector<std::string> node_argv(const std::string& exe, const launch_args& a, std::size_t r,
                                   const config::topology& topo,
                                   const std::vector<std::string>& forwards) {
  std::vector<std::string> argv = {exe, "node", "--config", a.config, "--rank", std::to_string(r)};
  const bool gnn = !a.dataset.empty() && !a.model.empty();
  if (!a.dataset.empty()) argv.insert(argv.end(), {"--dataset", a.dataset});
  if (!a.model.empty()) argv.insert(argv.end(), {"--model", a.model});
  argv.insert(argv.end(), a.serving.begin(), a.serving.end());
  if (!a.type_table_pdb.empty())  // a folder per rank: RocksDB allows one process in each
    argv.insert(argv.end(), {"--type-table-pdb", fmt::format("{}/rank-{}", a.type_table_pdb, r)});
  const auto& server = topo.servers[r];
  if (!a.files.empty()) argv.insert(argv.end(), {r == 0 ? "--files" : "--fetch-from", a.files});
  if (r != 0 && !server.door.empty()) {  // the TOML's door for this rank
    argv.insert(argv.end(), {"--listen", server.door});
    add_door_flags(argv, a, r, server, forwards);
  }
  if (r == 0 && !a.listen.empty()) {
    argv.insert(argv.end(), {"--listen", a.listen});
    // Rank 0 batches the cluster's GNN calls once every member is ready.
    if (gnn) argv.insert(argv.end(), {"--expect", std::to_string(topo.servers.size() - 1)});
    add_door_flags(argv, a, r, server, forwards);
    if (a.replan_drift > 0)
      argv.insert(argv.end(), {"--replan-drift", fmt::format("{}", a.replan_drift)});
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
  SPINDLE_TRY(check_door_ports(topo, a));
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
  std::vector<bool> doors(topo.servers.size());
  for (std::size_t r = 0; r < doors.size(); ++r)
    doors[r] = r == 0 ? !a.listen.empty() : !topo.servers[r].door.empty();
  SPINDLE_TRY(launch_plan_servers(exe, topo, path, doors, ranks, routes));
  const auto forwards = forward_flags(routes);
  // A door serves the GNN (--dataset and --model), recommendation models
  // (--rec-model, --dlrm-model) or the plan servers' (forwarded), or nothing.
  const bool gnn = !a.dataset.empty() && !a.model.empty();
  if (!a.listen.empty() && !gnn && a.rec.empty() && forwards.empty())
    return make_error(errc::invalid_argument,
                      "launch: --listen {} serves nothing: give --dataset and --model (a GNN), or "
                      "--rec-model / --dlrm-model, or a [colocation] plan in {}",
                      a.listen, path);
  for (std::size_t r = 0; r < topo.servers.size(); ++r)
    SPINDLE_TRY(start_rank(ranks, topo, r, node_argv(exe, a, r, topo, forwards), token));
  return supervise(ranks, set, a.restart);
}

}  // namespace spindle::runtime
