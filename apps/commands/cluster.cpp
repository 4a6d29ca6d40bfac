// `spindle node`, `spindle launch` and `spindle cluster-status`: one process per
// node of a cluster described by a topology TOML (servers = ranks, rank 0 = the
// coordinator), membership over CAF's middleman on each server's host:port.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "actors/node_actor.hpp"
#include "actors/scheduler_config.hpp"
#include "apps/commands/command.hpp"
#include "apps/commands/members_table.hpp"
#include "apps/commands/node_flags.hpp"
#include "apps/commands/runtime_flags.hpp"
#include "config/topology.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/subprocess.hpp"
#include "core/text_file.hpp"
#include "runtime/cluster_link.hpp"
#include "runtime/cluster_serving.hpp"
#include "runtime/coordinator_loss.hpp"
#include "runtime/door_gnns.hpp"
#include "runtime/door_stack.hpp"
#include "runtime/launched_ranks.hpp"
#include "runtime/model_follower.hpp"
#include "runtime/rec_forwarder.hpp"
#include "runtime/serve_rpc.hpp"
#include "runtime/token_file.hpp"
#include "transport/ucx/net_devices.hpp"

namespace spindle::apps {

using namespace runtime;  // the node runtime these commands start
namespace {

struct node_args {
  std::string config, dataset, model;
  int rank = 0, expect = 0;
  std::size_t workload = 0;
  std::string calibration, policy = "strict";  // rank 0: PSGS routing for the cluster
  front_door_args door;                        // rank 0 with --listen: the Cap'n Proto front door
  bool listen = false;
  bool no_verify_data = false;           // skip the rank's data checksums at start
  actors::placement_options placement;   // rank 0: re-plan on drift
  std::uint32_t peer_timeout_ms = 1000;  // a peer silent this long is declared down
  node_pipelines serving;                // pipelines and the door's batch policy
  std::string name;                      // the GNN's name at the door (default: model.toml's)
  std::vector<std::string> forwards;     // --forward NAME=HOST:PORT,...: served elsewhere
  runtime::graph_update_args graph;      // --graph-updates from --graph-stream
};

// CAF's middleman sends heartbeats every fifth of the timeout and closes a
// connection that stays silent for the whole timeout: a frozen peer (SIGSTOP,
// a hung host) is then seen down like a dead one (CAF's default waits 30 s).
void set_peer_timeout(caf::actor_system_config& cfg, std::uint32_t timeout_ms) {
  if (timeout_ms == 0) return;  // 0: CAF's defaults (no heartbeats)
  cfg.set("middleman.heartbeat-interval",
          caf::timespan{std::chrono::milliseconds(std::max<std::uint32_t>(1, timeout_ms / 5))});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::milliseconds(timeout_ms)});
}

// A node's front door: the cluster's GNN (when this node runs its pipelines)
// and the recommendation models of --rec-model and --dlrm-model, which every
// node serves on its own (tables in its memory; a DLRM with its own L1 cache
// and PDB, its VDB where --vdb says, a shared Redis giving every node the same
// level 2). Admin loads of recommendation models reach this node; a GNN load is
// refused by name (the ranks serve the GNN they started with).
status serve_door(caf::actor_system& sys, const node_args& a, rank_shard* shard,
                  std::optional<actors::gnn_model_binding> gnn,
                  std::function<std::string()> members, std::shared_ptr<door_gnns> gnns,
                  const std::vector<int>& also = {},
                  const std::function<bool(int)>& on_also = nullptr, int* stopped_by = nullptr) {
  SPINDLE_ASSIGN_OR_RETURN(auto token, admin_token(a.door.admin_token_file));
  // Recommendation models a Hera plan server serves: calls at this door go there.
  // Declared before the gateway, whose bindings call into them.
  std::vector<std::shared_ptr<rec_forwarder>> forwarders;
  for (const auto& text : a.forwards) {
    SPINDLE_ASSIGN_OR_RETURN(auto spec, parse_forward(text));
    SPINDLE_ASSIGN_OR_RETURN(auto f, rec_forwarder::start(spec));
    forwarders.push_back(std::move(f));
  }
  door_stack s;
  if (gnn) s.gnns.push_back(std::move(*gnn));
  if (shard && shard->live()) {  // versions and min_version here; updates through the stream
    s.live = shard->live();
    s.doors_update = false;
    if (const auto* f = shard->graph_stream()) s.graph_stream = [f] { return f->stats(); };
  }
  for (const auto& f : forwarders) s.recs.push_back(f->binding(a.door.admission()));
  // Loads through this door reach every node with a door (the coordinator's list).
  s.loader = gnns->loader(a.door.admission(), rec_loader(a.door));
  s.members = std::move(members);
  s.while_serving = [gnns](actors::gateway& gw) {  // loads at other doors
    return std::shared_ptr<void>(std::make_shared<model_follower>(gw, *gnns));
  };
  return serve_door_stack(sys, a.door, std::move(s), token, also, on_also, stopped_by);
}

bool serves_rec(const node_args& a) {
  return !a.door.rec_models.empty() || !a.door.dlrm.model.empty() || !a.forwards.empty();
}

// Rank 0: serves the workload and/or the front door over the cluster; returns
// once the workload is done (no --listen) or a stop signal came (--listen).
status coordinate(rank_context node, const actors::bridge_handle& bridge, const node_args& a) {
  if (a.listen) SPINDLE_TRY(check_exposure(a.door));  // before the cluster starts serving
  cluster_gnn_options o;
  o.serving = a.serving;
  o.model_dir = a.model;
  o.expect = a.expect;
  o.calibration = a.calibration;
  SPINDLE_ASSIGN_OR_RETURN(o.policy, serving::parse_routing_policy(a.policy));
  o.placement = a.placement;
  SPINDLE_ASSIGN_OR_RETURN(auto gnn, cluster_gnn::start(node, bridge, o));
  if (a.workload > 0) SPINDLE_TRY(gnn->run_workload(a.workload));
  if (!a.listen) return status::ok();
  return serve_door(node.sys, a, &node.shard, gnn->binding(a.name, a.door.admission()),
                    [g = gnn.get()] { return g->members_json(); },
                    std::make_shared<door_gnns>(node, a.serving));
}

// What a node with a dataset runs besides its actors: its shard, one member
// watch, and its side of placement re-plans (declared so the watch stops first).
struct shard_node {
  std::unique_ptr<rank_shard> shard;
  member_view view;
  std::unique_ptr<placement_sync> sync;
  std::unique_ptr<member_watch> watch;
  std::string token;  // the cluster token
  rank_context context(caf::actor_system& sys, caf::actor coordinator) {
    return {sys, std::move(coordinator), token, *shard, view, *watch, *sync};
  }
  void start(caf::actor_system& sys, const caf::actor& coordinator) {
    sync = std::make_unique<placement_sync>(coordinator, *shard);
    watch = std::make_unique<member_watch>(sys, coordinator, token, view);
    watch->on_poll([s = sync.get()](const auto& alive) { s->poll(alive); });
  }
};

// A node's own door (a member's, or a node of recommendation models only). A
// member's door keeps answering while the coordinator is gone; once it is back
// the door stops with *stopped_by = kCoordinatorBack, for the caller to rejoin
// (re-executing itself, the door opening again in the new image).
status serve_node_door(caf::actor_system& sys, const node_args& a, rank_shard* shard,
                       std::optional<actors::gnn_model_binding> gnn,
                       std::function<std::string()> members, std::shared_ptr<door_gnns> gnns,
                       const config::topology& topo, int rank, int* stopped_by) {
  SPINDLE_ASSIGN_OR_RETURN(auto coord, config::node_server(topo, 0));
  std::atomic<bool> done{false};
  std::thread watcher;
  auto on_signal = [&](int sig) {
    if (sig == kCoordinatorBack) return true;  // stop the door, then rejoin
    if (sig != kCoordinatorLost || watcher.joinable()) return false;
    log::warn(
        "node rank {}: the coordinator is gone; this door goes on answering and rejoins "
        "when {}:{} listens again",
        rank, coord.host, coord.port);
    watcher = std::thread([&done, coord] { watch_for_coordinator(done, coord); });
    return false;
  };
  const auto signals =
      rank != 0 ? std::vector<int>{kCoordinatorLost, kCoordinatorBack} : std::vector<int>{};
  const auto served =
      serve_door(sys, a, shard, std::move(gnn), std::move(members), std::move(gnns), signals,
                 on_signal, stopped_by);
  done = true;
  if (watcher.joinable()) watcher.join();
  return served;
}

// --calibrate times this cluster at start; --calibration FILE reads one made
// before: not both. The routing policy (--policy) applies to either.
status check_calibration_flags(node_args& a) {
  if (a.serving.calibrate && !a.calibration.empty())
    return make_error(errc::invalid_argument,
                      "--calibrate and --calibration {}: give one (--calibrate times this "
                      "cluster at start)",
                      a.calibration);
  if (!a.serving.calibration_out.empty() && !a.serving.calibrate)
    return make_error(errc::invalid_argument, "--calibration-out {} needs --calibrate",
                      a.serving.calibration_out);
  SPINDLE_ASSIGN_OR_RETURN(a.serving.routing, serving::parse_routing_policy(a.policy));
  return status::ok();
}

status run_node(const node_args& a) {
  const std::string& path = a.config;
  const int rank = a.rank;
  SPINDLE_TRY(follow_launch());
  sigset_t set = stop_signal_set();
  if (rank != 0) {
    sigaddset(&set, kCoordinatorLost);
    sigaddset(&set, kCoordinatorBack);
  }
  wait_for_signals_here(set);  // before CAF starts its threads
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(path));
  SPINDLE_ASSIGN_OR_RETURN(auto me, config::node_server(topo, rank));
  SPINDLE_TRY(transport::ucx::restrict_to_host(me.host));  // before any UCX context
  caf::actor_system_config cfg;
  actors::configure_scheduler(cfg);
  cfg.load<caf::io::middleman>();
  set_peer_timeout(cfg, a.peer_timeout_ms);
  actors::add_bridge_types(cfg);
  caf::actor_system sys{cfg};
  caf::actor self_actor, coord;
  shard_node sn;
  std::optional<actors::bridge_handle> bridge;
  // A node with a dataset holds its shard in UCX memory; with a model too it
  // serves batches, which travel over its UCX bridge.
  if (a.graph.on && a.dataset.empty())
    return make_error(errc::invalid_argument, "--graph-updates needs --dataset (the graph)");
  if (!a.dataset.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(
        sn.shard, rank_shard::start(topo, a.dataset, rank, a.no_verify_data, a.graph));
    if (!a.model.empty()) {
      actors::bridge_options bo;
      bo.rank = rank;
      SPINDLE_ASSIGN_OR_RETURN(bridge, actors::spawn_bridge(sys, bo));
    }
  }
  std::unique_ptr<member_serving> serving;
  std::optional<remote_link> coord_link;  // a member's link to rank 0 (outlives the actors)
  // On every return, stop the actors spawned here: CAF's actor_system waits for
  // all of its actors when destroyed, so an error would otherwise hang the node.
  struct stop_actors {
    caf::actor& node;
    std::optional<actors::bridge_handle>& bridge;
    ~stop_actors() {
      if (node) caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
      if (bridge) caf::anon_send_exit(bridge->actor, caf::exit_reason::user_shutdown);
    }
  } stop{self_actor, bridge};
  const std::string descriptor = sn.shard ? sn.shard->descriptor(0) : "";
  const std::string plan = sn.shard ? sn.shard->start_plan_checksum() : "";
  if (rank == 0) {
    SPINDLE_ASSIGN_OR_RETURN(sn.token, token_file(topo.token_file, "cluster token file", true));
    self_actor = actors::spawn_coordinator(sys, me.name, descriptor, bridge ? bridge->address : "",
                                           sn.token, plan);
    coord = self_actor;
  } else {
    SPINDLE_ASSIGN_OR_RETURN(auto coord_spec, config::node_server(topo, 0));
    // Rank 0 (or launch) creates the token file; the link proves it to rank 0's gate.
    SPINDLE_ASSIGN_OR_RETURN(sn.token, wait_for_token(topo.token_file, 30));
    SPINDLE_ASSIGN_OR_RETURN(coord_link, connect_gated(sys, coord_spec, sn.token, 30));
    coord = coord_link->actor;
    // A refused join (another plan, a wrong token) ends the node with the reason;
    // it holds UCX memory, so it leaves as a stop does, without teardown.
    self_actor = actors::spawn_member(
        sys, coord,
        {rank, me.name, descriptor, bridge ? bridge->actor : caf::actor(), bridge.has_value(),
         sn.token, plan, [] { ::kill(::getpid(), kCoordinatorLost); },
         [](const std::string& why) {
           fmt::print(stderr, "spindle: error: {}\n", why);
           std::fflush(nullptr);
           std::_Exit(1);
         }});
  }
  if (sn.shard) sn.start(sys, coord);
  if (rank != 0 && bridge) {
    SPINDLE_ASSIGN_OR_RETURN(serving, start_member_serving(sn.context(sys, coord), self_actor,
                                                           *bridge, a.model, a.serving));
  }
  // Behind a gate: only processes holding the cluster token reach CAF here.
  int caf_port = 0;
  SPINDLE_ASSIGN_OR_RETURN(auto gate, publish_gated(sys, self_actor, me, sn.token, &caf_port));
  fmt::print("node {} (rank {}) listening on {}:{} (CAF behind it on 127.0.0.1:{})\nready\n",
             me.name, rank, me.host, gate->port(), caf_port);
  std::fflush(stdout);
  bool stopped = false;
  auto whole_cluster = [&sys, coord, cluster_token = sn.token] {  // the member list, from rank 0
    caf::scoped_actor self{sys};
    std::string out = "[]";
    self->request(coord, std::chrono::seconds(2), actors::status_atom::value, cluster_token)
        .receive([&](const std::string& text) { out = text; }, [](caf::error&) {});
    return out;
  };
  if (rank == 0 && bridge && (a.workload > 0 || a.listen)) {
    SPINDLE_TRY(coordinate(sn.context(sys, coord), *bridge, a));
    stopped = a.listen;  // the front door returned on a stop signal
  } else if (a.workload > 0) {
    return make_error(errc::invalid_argument, "--workload needs --dataset and --model");
  } else if (a.listen) {  // a member's own front door, or a node of recommendation models only
    if (!serving && !serves_rec(a))
      return make_error(errc::invalid_argument,
                        "--listen on rank {} needs --dataset and --model, or --rec-model / "
                        "--dlrm-model",
                        rank);
    SPINDLE_TRY(check_exposure(a.door));
    std::optional<actors::gnn_model_binding> gnn;
    if (serving) gnn = serving->door(a.name, a.door.admission());
    int stopped_by = 0;
    // A member with pipelines serves loaded GNNs too; every door follows the
    // cluster's model list (a door without a shard, its recommendation models).
    auto gnns = serving ? std::make_shared<door_gnns>(sn.context(sys, coord), a.serving)
                        : std::make_shared<door_gnns>(sys, coord, sn.token);
    SPINDLE_TRY(serve_node_door(sys, a, sn.shard.get(), std::move(gnn), whole_cluster,
                                std::move(gnns), topo, rank, &stopped_by));
    if (stopped_by == kCoordinatorBack) return rejoin(topo, me, set, process_argv());
    stopped = true;
  }
  int sig = 0;
  if (!stopped) sigwait(&set, &sig);
  if (sig == kCoordinatorLost) return rejoin(topo, me, set, process_argv());
  log::info("node {}: stopping{}", me.name, stopped ? "" : fmt::format(" on signal {}", sig));
  if (sn.shard) {
    // Leave without tearing UCX down: UCX 1.13 asserts in ucp_worker_destroy
    // while purging a tcp endpoint whose peer died during wireup (seen when the
    // coordinator stops before its members). The process ends here; the OS
    // reclaims the shard memory, sockets and threads.
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return status::ok();  // `stop` ends the node and bridge actors, `serving` its pipeline
}

}  // namespace

void register_cluster(CLI::App& app, global_options&) {
  auto path = std::make_shared<std::string>();
  auto na = std::make_shared<node_args>();
  auto* node = app.add_subcommand(
      "node",
      "Run one node of a cluster (rank N of the config's servers; 0 = coordinator) "
      "until SIGINT/SIGTERM");
  node->add_option("--config", na->config, "Cluster TOML (a topology file with ports)")->required();
  node->add_option("--rank", na->rank, "This node's rank")->required();
  node->add_option("--dataset", na->dataset,
                   "Dataset: members hold their shard of the FAP plan in UCX memory");
  node->add_flag("--no-verify-data", na->no_verify_data,
                 "Skip the rank's data checksums at start (logged): a damaged or altered file "
                 "is then served as it is");
  node->add_option("--model", na->model,
                   "Model directory: with --dataset the node runs a pipeline (sampling, "
                   "gathering, inference) for the coordinator's batches");
  node->add_option("--workload", na->workload,
                   "Rank 0: serve N requests once members joined, print a checksum");
  node->add_option("--expect", na->expect, "Rank 0: members to wait for before serving")
      ->capture_default_str();
  node->add_option_function<std::string>(
      "--listen",
      [na](const std::string& v) {
        na->door.listen = v;
        na->listen = true;
      },
      "Rank 0: serve the Cap'n Proto front door on HOST:PORT (port 0: a free one) over the "
      "cluster, until SIGINT/SIGTERM");
  node->add_option("--calibration", na->calibration,
                   "Rank 0: PSGS calibration (spindle calibrate) routing every pipeline's batches; "
                   "without it the small executor");
  node->add_option("--policy", na->policy, "Rank 0 with --calibration: strict | loose | fixed")
      ->check(CLI::IsMember({"strict", "loose", "fixed"}))
      ->capture_default_str();
  node->add_option("--admin-token-file", na->door.admin_token_file,
                   "Rank 0: Admin token file (created if absent); without it Admin is disabled");
  node->add_option("--metrics", na->door.metrics, "Rank 0: Prometheus metrics on HOST:PORT");
  node->add_option("--access-log", na->door.access_log,
                   "This node's door: one line per call to FILE (see `serve`)");
  node->add_option("--http", na->door.http, "Rank 0: KServe v2 over HTTP/REST on HOST:PORT");
  node->add_option("--grpc", na->door.grpc, "Rank 0: KServe v2 over gRPC on HOST:PORT");
  node->add_option("--max-connections", na->door.max_connections,
                   "This node's doors: open connections per door (0: as `serve`)");
  node->add_option("--max-connections-per-peer", na->door.max_connections_per_peer,
                   "This node's doors: connections one address may hold on one door (0: as "
                   "`serve`)");
  node->add_option("--max-queue", na->door.max_queue,
                   "Rank 0: calls in flight per model before `overloaded` (a hard cap)")
      ->capture_default_str();
  node->add_option("--slo-ms", na->door.slo_ms,
                   "Rank 0: end-to-end latency objective; calls in flight are limited to the "
                   "measured capacity x half of it (0: only --max-queue)")
      ->capture_default_str();
  node->add_option("--peer-timeout-ms", na->peer_timeout_ms,
                   "Declare a peer down after this long without a message (heartbeats every "
                   "fifth of it; 0: never, CAF's default)")
      ->capture_default_str();
  node->add_option("--replan-drift", na->placement.drift_threshold,
                   "Rank 0: re-plan feature placement when the observed FAP drifts past this "
                   "total-variation distance (0: only on request, Admin `replan`)")
      ->capture_default_str();
  node->add_option("--replan-min-requests", na->placement.min_requests,
                   "Rank 0: requests observed since the last plan before drift is judged")
      ->capture_default_str();
  add_pipeline_options(*node, na->serving);
  node->add_option("--forward", na->forwards,
                   "A recommendation model another server serves, as NAME=HOST:PORT[,HOST:PORT"
                   "...]: calls for it at this door go there, to its servers in turn "
                   "(`launch` passes the Hera plan's servers); repeatable");
  add_graph_update_options(*node, na->graph);
  node->add_option("--name", na->name,
                   "Name clients call the GNN by at this node's door (default: model.toml's name)");
  add_rec_serving_options(*node, na->door);
  node->callback([na] {
    status st = check_calibration_flags(*na);
    if (st.is_ok()) st = run_node(*na);
    if (int rc = report(st)) throw CLI::RuntimeError(rc);
  });
  register_launch(app);
  register_cluster_status(app);
}

}  // namespace spindle::apps
