// `spindle launch`: starts every rank of a cluster TOML (local ranks as child
// processes, other hosts through the TOML's launcher), Hera's plan servers of
// its [colocation] section first, relays their output with the rank prefix,
// forwards SIGINT/SIGTERM and restarts ranks that exit with --restart.
#include <linux/close_range.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands/command.hpp"
#include "colocation/hera/colocation.hpp"
#include "colocation/hera/profile.hpp"
#include "config/colocation.hpp"
#include "config/topology.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/subprocess.hpp"
#include "core/text_file.hpp"
#include "runtime/token_file.hpp"

namespace spindle::apps {

using namespace runtime;
namespace {

// Ranks on these hosts are started by launch itself; others through the launcher.
bool is_this_machine(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

// `sh -c "<launcher with {host} and {rank}> <the rank's command, shell-quoted>"`.
std::vector<std::string> launcher_argv(const std::string& launcher, const std::string& host,
                                       int rank, const std::vector<std::string>& argv) {
  std::string prefix = launcher;
  for (auto [key, value] :
       {std::pair<std::string, std::string>{"{host}", host}, {"{rank}", std::to_string(rank)}})
    for (std::size_t at = prefix.find(key); at != std::string::npos; at = prefix.find(key))
      prefix.replace(at, key.size(), value);
  std::string cmd = "exec " + prefix;  // the launcher replaces the shell: signals reach it
  for (const auto& arg : argv) {
    std::string q = "'";
    for (char ch : arg) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    cmd += " " + q + "'";
  }
  return {"/bin/sh", "-c", cmd};
}

// A port free on `host` now (bound, read, released), for a child to listen on.
expected<int> free_port(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), "0", &hints, &res) != 0 || !res)
    return make_error(errc::invalid_argument, "host '{}': cannot resolve", host);
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = -1;
  if (fd >= 0 && ::bind(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
      port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  if (fd >= 0) ::close(fd);
  freeaddrinfo(res);
  if (port <= 0) return make_error(errc::io_error, "host '{}': no free port", host);
  return port;
}

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

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

// The recommendation flags of a rank with a door: as given, and its own PDB
// (RocksDB allows one process per directory).
void add_rec_flags(std::vector<std::string>& argv, const launch_args& a, std::size_t rank) {
  argv.insert(argv.end(), a.rec.begin(), a.rec.end());
  if (!a.pdb.empty()) argv.insert(argv.end(), {"--pdb", fmt::format("{}/rank-{}", a.pdb, rank)});
}

// One rank started here, and when to start it again after it exited.
struct launched_rank {
  int rank = 0;
  std::string label;  // how its lines are prefixed: "rank N", or "rank N hera"
  std::vector<std::string> argv;
  std::optional<child_process> process;
  std::chrono::steady_clock::time_point restart_at{};
  std::chrono::milliseconds backoff{0};
};

// Relays the lines rank `r` has written so far; after it exited, its last ones
// (often the error it exited on), which the pipe still holds.
void relay_lines(launched_rank& r) {
  while (auto line = r.process->read_line(0)) fmt::print("[{}] {}\n", r.label, *line);
}

// Reaps a rank that exited, says so, and (with --restart) starts it again once
// its backoff has passed. Returns whether the rank is running (or will be).
bool tend(launched_rank& r, bool restart) {
  using namespace std::chrono;
  if (r.process) {
    const auto code = r.process->try_wait();
    if (!code) return true;
    relay_lines(r);
    r.process.reset();
    if (!restart) {
      fmt::print("[{}] exited with {}\n", r.label, *code);
      return false;
    }
    r.backoff = std::min<milliseconds>(seconds(30), r.backoff.count() ? 2 * r.backoff : seconds(1));
    r.restart_at = steady_clock::now() + r.backoff;
    fmt::print("[{}] exited with {}; restarting in {} ms\n", r.label, *code, r.backoff.count());
    return true;
  }
  if (!restart || steady_clock::now() < r.restart_at) return restart;
  auto c = child_process::spawn(r.argv, {fmt::format("SPINDLE_LAUNCH_PID={}", ::getpid())}, true);
  if (!c) {
    fmt::print("[{}] cannot restart: {}\n", r.label, c.error().to_string());
    r.restart_at = steady_clock::now() + r.backoff;
    return true;
  }
  r.process.emplace(std::move(*c));
  fmt::print("[{}] restarted\n", r.label);
  return true;
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
    add_rec_flags(argv, a, r);
    argv.insert(argv.end(), forwards.begin(), forwards.end());
    if (!a.admin_token_file.empty())
      argv.insert(argv.end(), {"--admin-token-file", a.admin_token_file});
  }
  if (r == 0 && !a.listen.empty()) {
    argv.insert(argv.end(), {"--listen", a.listen, "--expect", std::to_string(ranks - 1)});
    add_rec_flags(argv, a, r);
    argv.insert(argv.end(), forwards.begin(), forwards.end());
    if (!a.admin_token_file.empty())
      argv.insert(argv.end(), {"--admin-token-file", a.admin_token_file});
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

// Hera Algorithm 2 over the cluster TOML's [colocation] section: plan server i
// runs on local rank i as a `spindle serve` of its one or two recommendation
// models (worker pools under Hera's node manager, on a free loopback port,
// Admin with the cluster token); its "listening" line says where.
status launch_colocation(const std::string& exe, const config::topology& topo,
                         const std::string& path, std::vector<launched_rank>& ranks,
                         std::map<std::string, std::vector<std::string>>& routes) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "cluster config"));
  SPINDLE_ASSIGN_OR_RETURN(auto section, config::parse_colocation(text, path));
  if (!section) return status::ok();
  SPINDLE_ASSIGN_OR_RETURN(auto profiles, colocation::hera::load_profile_table(section->profiles));
  std::map<std::string, double> targets;
  std::map<std::string, std::string> dirs;
  for (const auto& m : section->models) targets[m.name] = m.qps, dirs[m.name] = m.dir;
  SPINDLE_ASSIGN_OR_RETURN(auto plan, colocation::hera::plan_cluster(profiles, targets));
  std::vector<int> local;
  for (std::size_t r = 0; r < topo.servers.size(); ++r)
    if (is_loopback(topo.servers[r].host)) local.push_back(int(r));
  if (plan.servers.size() > local.size())
    return make_error(errc::invalid_argument,
                      "{}: the colocation plan needs {} servers; {} ranks run on this machine",
                      path, plan.servers.size(), local.size());
  for (std::size_t i = 0; i < plan.servers.size(); ++i) {
    const auto& sp = plan.servers[i];
    const int rank = local[i];
    fmt::print("[plan] server {} on rank {}: {} expected {} QPS, EMU {:.0f}%\n", i, rank,
               fmt::join(sp.models, " + "), fmt::join(sp.qps, " + "), 100 * sp.emu);
    // A port chosen now, kept across --restart: every door forwards there.
    const std::string& host = topo.servers[std::size_t(rank)].host;
    SPINDLE_ASSIGN_OR_RETURN(const int port, free_port(host));
    const std::string listen = fmt::format("{}:{}", host, port);
    for (const auto& m : sp.models) routes[m].push_back(listen);
    std::vector<std::string> argv = {exe,
                                     "serve",
                                     "--listen",
                                     listen,
                                     "--admin-token-file",
                                     topo.token_file,
                                     "--node-manager",
                                     "hera",
                                     "--profiles",
                                     section->profiles,
                                     "--rec-workers",
                                     "1"};
    for (const auto& m : sp.models) argv.insert(argv.end(), {"--rec-model", m + "=" + dirs[m]});
    SPINDLE_ASSIGN_OR_RETURN(
        auto c,
        child_process::spawn(argv, {fmt::format("SPINDLE_LAUNCH_PID={}", ::getpid())}, true));
    auto& lr = ranks.emplace_back();
    lr.rank = rank, lr.label = fmt::format("rank {} hera", rank), lr.argv = std::move(argv);
    lr.process.emplace(std::move(c));
  }
  return status::ok();
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
  std::map<std::string, std::vector<std::string>> routes;
  SPINDLE_TRY(launch_colocation(exe, topo, path, ranks, routes));
  std::vector<std::string> forwards;
  for (const auto& [model, at] : routes)
    forwards.insert(forwards.end(), {"--forward", fmt::format("{}={}", model, fmt::join(at, ","))});
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
    // A node started here ends when launch does, even if launch is killed.
    SPINDLE_ASSIGN_OR_RETURN(
        auto c,
        child_process::spawn(argv, {fmt::format("SPINDLE_LAUNCH_PID={}", ::getpid())}, true));
    auto& lr = ranks.emplace_back();
    lr.rank = int(r), lr.label = label, lr.argv = std::move(argv);
    lr.process.emplace(std::move(c));
  }
  // Relay children's lines, reap (and with --restart restart) ranks that
  // exit, and forward SIGINT/SIGTERM to them.
  timespec tick{0, 100'000'000};
  for (bool any = !ranks.empty(); any;) {
    for (auto& r : ranks)
      if (r.process) relay_lines(r);
    std::fflush(stdout);
    siginfo_t info;
    if (sigtimedwait(&set, &info, &tick) > 0) {
      for (auto& r : ranks)
        if (r.process) r.process->signal(info.si_signo);
      for (auto& r : ranks)
        if (r.process) {
          const int code = r.process->wait();
          relay_lines(r);
          fmt::print("[{}] exited with {}\n", r.label, code);
        }
      return status::ok();
    }
    any = false;
    for (auto& r : ranks) any = tend(r, a.restart) || any;
  }
  return status::ok();
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
  for (const char* flag : {"--graph-stream", "--graph-stream-key", "--graph-log-sync"})
    launch->add_option_function<std::string>(
        flag,
        [la, flag](const std::string& v) { la->serving.insert(la->serving.end(), {flag, v}); },
        "Passed to every rank (see `node`)");
  launch->add_option("--calibration-out", la->calibration_out,
                     "With --calibrate: rank 0 writes the cluster's calibration there");
  for (const char* flag : {"--pipelines", "--max-batch", "--batch-deadline-us", "--name",
                           "--gnnsched", "--gnnsched-memory-mb", "--calibrate-batches"})
    launch->add_option_function<std::string>(
        flag,
        [la, flag](const std::string& v) {
          la->serving.insert(la->serving.end(), {flag, v});
        },
        "Passed to every rank (see `node`)");
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
