// `spindle launch`: starts every rank of a cluster TOML (local ranks as child
// processes, other hosts through the TOML's launcher), Hera's plan servers of
// its [colocation] section first, relays their output with the rank prefix,
// forwards SIGINT/SIGTERM and restarts ranks that exit with --restart.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "apps/commands/command.hpp"
#include "config/topology.hpp"
#include "core/signals.hpp"
#include "runtime/launched_ranks.hpp"
#include "runtime/plan_servers.hpp"
#include "runtime/token_file.hpp"

namespace spindle::apps {

using namespace runtime;
namespace {

struct launch_args {
  std::string config, dataset, model, listen, admin_token_file;
  std::string metrics, calibration, policy;  // rank 0's, as `node` takes them
  std::string calibration_out;               // rank 0's, with --calibrate
  std::string http, grpc;                    // rank 0's KServe v2 doors
  double replan_drift = 0;                   // passed to rank 0 as --replan-drift when > 0
  bool restart = false;              // restart a rank that exits (backoff 1 s doubling to 30 s)
  std::vector<std::string> serving;  // --pipelines, --max-batch, ...: passed to every rank
  std::vector<std::string> rec;      // recommendation models' flags: passed to every door
  std::string pdb;                   // --pdb DIR: rank N's DLRM tables in DIR/rank-N
};

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

status run_launch(const launch_args& a) {
  const std::string& path = a.config;
  sigset_t set = stop_signal_set();
  wait_for_signals_here(set);
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(path));
  if (!a.listen.empty() && (a.dataset.empty() || a.model.empty()))
    return make_error(errc::invalid_argument, "launch: --listen needs --dataset and --model");
  // Before any rank starts: members read it as soon as they reach rank 0.
  SPINDLE_TRY(token_file(topo.token_file, "cluster token file", true).error_or_ok());
  char exe[4096] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0)
    return make_error(errc::io_error, "launch: cannot find the spindle binary");
  std::vector<launched_rank> ranks;
  // Hera's plan servers first: every rank's door forwards their models to them.
  plan_routes routes;
  SPINDLE_TRY(launch_plan_servers(exe, topo, path, ranks, routes));
  const auto forwards = forward_flags(routes);
  for (std::size_t r = 0; r < topo.servers.size(); ++r) {
    auto argv = node_argv(exe, a, r, topo.servers.size(), topo.servers[r].door, forwards);
    const std::string& host = topo.servers[r].host;
    std::string label = fmt::format("rank {}", r);
    if (!is_this_machine(host)) {
      if (topo.launcher.empty()) {
        std::string cmd = "spindle";
        for (std::size_t i = 1; i < argv.size(); ++i) cmd += " " + argv[i];
        fmt::print("rank {} runs on {}: start it there with\n  {}\n", r, host, cmd);
        continue;
      }
      // Through the TOML's launcher (ssh, ip netns exec, ...): its output relayed,
      // signals forwarded to it, restarted with --restart like a local rank.
      argv = launcher_argv(topo.launcher, host, int(r), argv);
      label = fmt::format("rank {}@{}", r, host);
      fmt::print("rank {} on {}: {}\n", r, host, argv.back());
    }
    SPINDLE_TRY(spawn_rank(ranks, int(r), label, std::move(argv)));
  }
  supervise(ranks, set, a.restart);
  return status::ok();
}

// Options whose value every rank gets as given (`node` reads them).
void pass_to_every_rank(CLI::App& launch, const std::shared_ptr<launch_args>& la,
                        std::initializer_list<const char*> flags) {
  for (const char* flag : flags)
    launch.add_option_function<std::string>(
        flag,
        [la, flag](const std::string& v) {
          la->serving.insert(la->serving.end(), {flag, v});
        },
        "Passed to every rank (see `node`)");
}

}  // namespace

void register_launch(CLI::App& app) {
  auto la = std::make_shared<launch_args>();
  auto* launch =
      app.add_subcommand("launch",
                         "Start every rank on this host as child processes, relay their output "
                         "and forward SIGINT/SIGTERM; print the command for other hosts");
  launch->add_option("--config", la->config, "Cluster TOML")->required();
  launch->add_option("--dataset", la->dataset,
                     "Dataset for every rank (each holds its shard of the FAP plan)");
  launch->add_option("--model", la->model,
                     "Model for every rank (each runs a pipeline for the coordinator's batches)");
  launch->add_option("--listen", la->listen,
                     "Rank 0 serves the front door on HOST:PORT once every rank is ready");
  launch->add_option("--admin-token-file", la->admin_token_file, "Rank 0's Admin token file");
  launch->add_flag("--restart", la->restart,
                   "Restart a rank that exits, after a backoff (1 s doubling to 30 s); without it "
                   "an exited rank is reported and left down");
  launch
      ->add_option("--replan-drift", la->replan_drift,
                   "Rank 0 re-plans feature placement past this FAP drift (see `node`)")
      ->check(CLI::Range(0.0, 1e6));
  launch->add_option("--metrics", la->metrics, "Rank 0: Prometheus metrics on HOST:PORT");
  launch->add_option("--http", la->http, "Rank 0: KServe v2 over HTTP/REST on HOST:PORT");
  launch->add_option("--grpc", la->grpc, "Rank 0: KServe v2 over gRPC on HOST:PORT");
  launch->add_option("--calibration", la->calibration,
                     "Rank 0: PSGS calibration from `spindle calibrate` (see `node`)");
  launch->add_option("--policy", la->policy, "Rank 0 with --calibration: strict | loose | fixed")
      ->check(CLI::IsMember({"strict", "loose", "fixed"}));
  launch->add_flag_callback(
      "--calibrate", [la] { la->serving.push_back("--calibrate"); },
      "Every rank times PSGS routing over the cluster's shards at start (see `node`)");
  launch->add_flag_callback(
      "--graph-updates", [la] { la->serving.push_back("--graph-updates"); },
      "Every rank applies the graph batches of --graph-stream, each in a log of its own "
      "(see `node`)");
  pass_to_every_rank(*launch, la, {"--graph-stream", "--graph-stream-key", "--graph-log-sync"});
  launch->add_option("--calibration-out", la->calibration_out,
                     "With --calibrate: rank 0 writes the cluster's calibration there");
  pass_to_every_rank(*launch, la,
                     {"--pipelines", "--max-batch", "--batch-deadline-us", "--name", "--gnnsched",
                      "--gnnsched-memory-mb", "--calibrate-batches"});
  for (const char* flag :
       {"--rec-model", "--rec-workers", "--dlrm-model", "--dlrm-name", "--dlrm-instances",
        "--hps-config", "--vdb", "--vdb-redis", "--vdb-partitions", "--cache-fraction",
        "--hit-rate-threshold", "--refresh-ms"}) {
    auto* o = launch->add_option_function<std::vector<std::string>>(
        flag,
        [la, flag](const std::vector<std::string>& vs) {
          for (const auto& v : vs) la->rec.insert(la->rec.end(), {flag, v});
        },
        "Passed to every rank with a door (see `node`)");
    if (std::string_view(flag) != "--rec-model") o->expected(1);
  }
  launch->add_option("--pdb", la->pdb,
                     "DLRM tables (RocksDB): rank N's in DIR/rank-N, filled on its first start");
  on_run(launch, [la] { return run_launch(*la); });
}

}  // namespace spindle::apps
