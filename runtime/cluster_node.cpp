#include "runtime/cluster_node.hpp"

#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "actors/node_actor.hpp"
#include "actors/scheduler_config.hpp"
#include "config/launcher_rank.hpp"
#include "config/topology.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "runtime/cluster_join.hpp"
#include "runtime/cluster_link.hpp"
#include "runtime/cluster_token.hpp"
#include "runtime/coordinator_loss.hpp"
#include "runtime/launched_ranks.hpp"
#include "runtime/model_repository.hpp"
#include "runtime/node_door.hpp"
#include "runtime/peer_rows.hpp"
#include "runtime/rec_models.hpp"
#include "runtime/serve_rpc.hpp"
#include "transport/ucx/net_devices.hpp"

namespace spindle::runtime {
namespace {

// CAF's middleman sends heartbeats every fifth of the timeout and closes a
// connection that stays silent for the whole timeout: a frozen peer (SIGSTOP,
// a hung host) is then seen down like a dead one (CAF's default waits 30 s).
void set_peer_timeout(caf::actor_system_config& cfg, std::uint32_t timeout_ms) {
  if (timeout_ms == 0) return;  // 0: CAF's defaults (no heartbeats)
  cfg.set("middleman.heartbeat-interval",
          caf::timespan{std::chrono::milliseconds(std::max<std::uint32_t>(1, timeout_ms / 5))});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::milliseconds(timeout_ms)});
}

// Rank 0: serves the workload and/or the front door over the cluster; returns
// once the workload is done (no --listen) or a stop signal came (--listen).
status coordinate(rank_context node, const actors::bridge_handle& bridge, const node_args& a) {
  if (a.listen) SPINDLE_TRY(check_exposure(a.door));  // before the cluster starts serving
  cluster_gnn_options o;
  o.serving = a.serving;
  o.model_dir = a.model;
  o.expect = a.expect;
  o.calibration = a.serving.calibration;
  SPINDLE_ASSIGN_OR_RETURN(o.policy, serving::parse_routing_policy(a.policy));
  o.placement = a.placement;
  SPINDLE_ASSIGN_OR_RETURN(auto gnn, cluster_gnn::start(node, bridge, o));
  if (a.workload > 0) SPINDLE_TRY(gnn->run_workload(a.workload));
  if (!a.listen) return status::ok();
  return serve_door(
      node.sys, a, &node.shard, gnn->binding(a.name, a.door.admission()),
      [g = gnn.get()] { return g->members_json(); }, std::make_shared<door_gnns>(node, a.serving));
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

// Stops the actors spawned for the node when it goes: CAF's actor_system waits
// for all of its actors when destroyed, so an error would otherwise hang the node.
struct node_actors_stop {
  caf::actor& node;
  std::optional<actors::bridge_handle>& bridge;
  ~node_actors_stop() {
    if (node) caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    if (bridge) caf::anon_send_exit(bridge->actor, caf::exit_reason::user_shutdown);
  }
};

// What a running node holds, declared in the order it must be torn down.
struct node_parts {
  caf::actor self_actor, coord;
  shard_node sn;
  std::optional<actors::bridge_handle> bridge;
  std::unique_ptr<member_serving> serving;
  std::optional<remote_link> coord_link;  // a member's link to rank 0 (outlives the actors)
  node_actors_stop stop{self_actor, bridge};
};

// A node with a dataset holds its shard in UCX memory; with a model too it
// serves batches, which travel over its UCX bridge.
status open_shard(node_parts& n, caf::actor_system& sys, const config::topology& topo,
                  const node_args& a) {
  if (a.graph.on && a.dataset.empty())
    return make_error(errc::invalid_argument, "--graph-updates needs --dataset (the graph)");
  if (a.dataset.empty()) return status::ok();
  SPINDLE_ASSIGN_OR_RETURN(n.sn.shard,
                           rank_shard::start(topo, a.dataset, a.rank, a.no_verify_data, a.graph));
  if (!a.model.empty()) {
    actors::bridge_options bo;
    bo.rank = a.rank;
    SPINDLE_ASSIGN_OR_RETURN(n.bridge, actors::spawn_bridge(sys, bo));
  }
  return status::ok();
}

// Rank 0 spawns the coordinator; a member links to it and joins.
status join(node_parts& n, caf::actor_system& sys, const config::topology& topo,
            const config::server_spec& me, const node_args& a) {
  const int rank = a.rank;
  const std::string descriptor = n.sn.shard ? n.sn.shard->descriptor(0) : "";
  const std::string plan = n.sn.shard ? n.sn.shard->start_plan_checksum() : "";
  // Rows of its own copy, lent to a peer that cannot read them elsewhere.
  const auto lend = n.sn.shard ? lend_hook(*n.sn.shard) : actors::lend_fn{};
  if (rank == 0) {
    n.self_actor =
        actors::spawn_coordinator(sys, me.name, descriptor, n.bridge ? n.bridge->address : "",
                                  n.sn.token, plan, lend, int(topo.servers.size()));
    n.coord = n.self_actor;
    return status::ok();
  }
  if (!n.coord_link) {  // a rank joining with --join is linked already
    SPINDLE_ASSIGN_OR_RETURN(auto coord_spec, config::node_server(topo, 0));
    // The link proves the token to rank 0's gate.
    SPINDLE_ASSIGN_OR_RETURN(n.coord_link, connect_gated(sys, coord_spec, n.sn.token, 30));
  }
  n.coord = n.coord_link->actor;
  // A refused join (another plan, a wrong token) ends the node with the reason;
  // it holds UCX memory, so it leaves as a stop does, without teardown.
  n.self_actor = actors::spawn_member(
      sys, n.coord,
      {rank, me.name, descriptor, n.bridge ? n.bridge->actor : caf::actor(), n.bridge.has_value(),
       n.sn.token, plan, [] { ::kill(::getpid(), kCoordinatorLost); },
       [](const std::string& why) {
         fmt::print(stderr, "spindle: error: {}\n", why);
         std::fflush(nullptr);
         std::_Exit(1);
       },
       lend, a.join.empty() ? std::string() : a.address});
  return status::ok();
}

// A member's own front door, or a node of recommendation models only. Sets
// *rejoin when the coordinator came back and the door stopped for it.
status serve_own_door(node_parts& n, caf::actor_system& sys, const config::topology& topo,
                      const node_args& a, std::function<std::string()> members, bool* rejoin) {
  if (!n.serving && !serves_rec(a))
    return make_error(errc::invalid_argument,
                      "--listen on rank {} needs --dataset and --model, or --rec-model / "
                      "--dlrm-model",
                      a.rank);
  SPINDLE_TRY(check_exposure(a.door));
  std::optional<actors::gnn_model_binding> gnn;
  if (n.serving) gnn = n.serving->door(a.name, a.door.admission());
  int stopped_by = 0;
  // A member with pipelines serves loaded GNNs too; every door follows the
  // cluster's model list (a door without a shard, its recommendation models).
  auto gnns = n.serving ? std::make_shared<door_gnns>(n.sn.context(sys, n.coord), a.serving)
                        : std::make_shared<door_gnns>(sys, n.coord, n.sn.token);
  if (!n.serving) gnns->share_folders(a.serving.loaded, a.serving.fetch_loaded);
  SPINDLE_TRY(serve_node_door(sys, a, n.sn.shard.get(), std::move(gnn), std::move(members),
                              std::move(gnns), topo, a.rank, &stopped_by));
  *rejoin = stopped_by == kCoordinatorBack;
  return status::ok();
}

// Serves what the flags ask (a workload, a door), then waits for a stop signal
// unless a door already took one; a member that lost its coordinator rejoins.
status serve_joined(node_parts& n, caf::actor_system& sys, const config::topology& topo,
                    const config::server_spec& me, const node_args& a, sigset_t set,
                    const std::vector<std::string>& self_argv) {
  bool stopped = false;
  auto whole_cluster = [&sys, coord = n.coord, cluster_token = n.sn.token] {  // from rank 0
    caf::scoped_actor self{sys};
    std::string out = "[]";
    self->request(coord, std::chrono::seconds(2), actors::status_atom::value, cluster_token)
        .receive([&](const std::string& text) { out = text; }, [](caf::error&) {});
    return out;
  };
  if (a.rank == 0 && n.bridge && (a.workload > 0 || a.listen)) {
    SPINDLE_TRY(coordinate(n.sn.context(sys, n.coord), *n.bridge, a));
    stopped = a.listen;  // the front door returned on a stop signal
  } else if (a.workload > 0) {
    return make_error(errc::invalid_argument, "--workload needs --dataset and --model");
  } else if (a.listen) {
    bool back = false;
    SPINDLE_TRY(serve_own_door(n, sys, topo, a, whole_cluster, &back));
    if (back) return rejoin(topo, me, set, self_argv);
    stopped = true;
  }
  int sig = 0;
  if (!stopped) sigwait(&set, &sig);
  if (sig == kCoordinatorLost) return rejoin(topo, me, set, self_argv);
  log::info("node {}: stopping{}", me.name, stopped ? "" : fmt::format(" on signal {}", sig));
  if (n.sn.shard) {
    // Leave without tearing UCX down: UCX 1.13 asserts in ucp_worker_destroy
    // while purging a tcp endpoint whose peer died during wireup (seen when the
    // coordinator stops before its members). The process ends here; the OS
    // reclaims the shard memory, sockets and threads.
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return status::ok();  // `stop` ends the node and bridge actors, `serving` its pipeline
}

// The rank --rank gives, else the one its launcher's environment gives (mpirun,
// srun, a StatefulSet's pod); rank 0 started so waits, without --expect, for
// every other rank of the TOML.
expected<node_args> with_rank(node_args a, const config::topology& topo) {
  if (a.rank >= 0 || !a.join.empty()) {  // a joining rank's comes from rank 0's members
    a.expect = std::max(a.expect, 0);
    return a;
  }
  SPINDLE_ASSIGN_OR_RETURN(auto r, config::rank_from_environment(config::read_launcher_environment(),
                                                                 topo.servers.size(), a.config));
  log::info("rank {} of {} from {}", r.rank, topo.servers.size(), r.source);
  a.rank = r.rank;
  if (a.expect < 0) a.expect = int(topo.servers.size()) - 1;
  return a;
}

// --type-table-*: refused unless this rank serves a GNN with an embedding table
// (its model is on this disk by now); else this rank's folder, opened.
status open_type_tables(node_args& a) {
  std::vector<std::string> dirs;
  if (!a.dataset.empty() && !a.model.empty()) dirs.push_back(a.model);
  SPINDLE_TRY(check_type_table_flags(a.type_tables, dirs));
  if (a.type_tables.pdb.empty()) return status::ok();
  SPINDLE_ASSIGN_OR_RETURN(a.serving.type_pdb, type_tables::open(a.type_tables));
  return status::ok();
}

// --device cuda: one GPU executor per pipeline over the rank's graph (sampling
// and forward passes on the GPU) and a device tier of the highest-FAP rows,
// filled once through the cluster's shards when the first pipelines start
// (spawn_pipelines); rows outside it come through the shards per batch.
status open_devices(node_parts& n, node_args& a) {
  if (a.device != "cuda") return status::ok();
  if (!n.sn.shard || a.model.empty())
    return make_error(errc::invalid_argument, "--device cuda: this rank serves no GNN (give "
                                              "--dataset and --model)");
  auto ex = serving::device_executors::create_for_rank(n.sn.shard->dataset(),
                                                       a.device_feature_mb << 20);
  if (!ex) return std::move(ex).error().with_context("--device cuda: ");
  a.serving.executors = std::make_shared<serving::device_executors>(std::move(*ex));
  log::info("rank {}: {} pipeline{} with a GPU executor each (sampling, the device tier's rows "
            "and forward passes on the GPU; other rows from the cluster's shards)",
            a.rank, a.serving.pipelines, a.serving.pipelines == 1 ? "" : "s");
  return status::ok();
}

}  // namespace

// Every rank's PDB needs every update, so each rank reads the streams in a
// consumer group of its own: a group given to every rank (mpirun, launch) is
// made per rank. Without one, the default group (host and PDB folder) is
// already one per rank.
std::string rank_updates_group(const std::string& group, int rank) {
  return group.empty() ? group : fmt::format("{}.rank-{}", group, rank);
}

status refuse_coordinator_flags(const node_args& a) {
  if (a.rank == 0 || a.coordinator_flags.empty()) return status::ok();
  const bool one = a.coordinator_flags.size() == 1;
  return make_error(errc::invalid_argument,
                    "{} {} honoured by rank 0 (the coordinator) only, and this is {}: give "
                    "{} to rank 0 alone (with mpirun, in a block of its own: `mpirun -n 1 "
                    "spindle node ... : -n N spindle node ...`)",
                    fmt::join(a.coordinator_flags, ", "), one ? "is" : "are",
                    a.join.empty() ? fmt::format("rank {}", a.rank) : "a rank joining with --join",
                    one ? "it" : "them");
}

namespace {

// What a door would refuse after the rank joined (and `launch` took it as
// started) is refused before the rank starts anything.
status check_door_folders(const node_args& a) {
  if (a.listen) SPINDLE_TRY(check_door_flags(a.door));
  if (a.serving.repository.empty()) return status::ok();
  if (a.dataset.empty() || a.model.empty())
    return make_error(errc::invalid_argument,
                      "--model-repository {}: its GNNs run over this rank's shard: it needs "
                      "--dataset and --model",
                      a.serving.repository);
  SPINDLE_ASSIGN_OR_RETURN(auto models, scan_repository(a.serving.repository));
  if (models.empty())
    return make_error(errc::invalid_argument,
                      "--model-repository {}: holds no model (NAME/VERSION/model.toml)",
                      a.serving.repository);
  return status::ok();
}

expected<rank_folders> folders_of(const node_args& a) {
  rank_folders d{a.dataset, a.model, a.door.dlrm.model, {}, a.serving.repository};
  SPINDLE_ASSIGN_OR_RETURN(d.rec_models, parse_rec_model_flags(a.door.rec_models));
  return d;
}

}  // namespace

status run_node(const node_args& given, const std::vector<std::string>& self_argv) {
  SPINDLE_TRY(follow_launch());
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(given.config));
  SPINDLE_ASSIGN_OR_RETURN(node_args a, with_rank(given, topo));
  SPINDLE_TRY(refuse_coordinator_flags(a));
  if (a.device == "cuda" && a.graph.on)  // before the update stream is followed
    return make_error(errc::invalid_argument,
                      "--graph-updates with --device cuda: the GPU holds the base graph and would "
                      "answer on it; serve updates with --device host");
  // With --fetch-from the door's folders may arrive later: checked once fetched.
  if (a.files.fetch_from.empty()) SPINDLE_TRY(check_door_folders(a));
  sigset_t set = stop_signal_set();
  if (a.rank != 0) {
    sigaddset(&set, kCoordinatorLost);
    sigaddset(&set, kCoordinatorBack);
  }
  wait_for_signals_here(set);  // before CAF starts its threads
  config::server_spec me;
  if (a.join.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(me, config::node_server(topo, a.rank));
    SPINDLE_TRY(transport::ucx::restrict_to_host(me.host));  // before any UCX context
  }
  caf::actor_system_config cfg;
  actors::configure_scheduler(cfg);
  cfg.load<caf::io::middleman>();
  set_peer_timeout(cfg, a.peer_timeout_ms);
  actors::add_bridge_types(cfg);
  caf::actor_system sys{cfg};
  node_parts n;
  // Handed to the node (SPINDLE_CLUSTER_TOKEN, --token-file), else the TOML's
  // file on this host: rank 0 creates it, a member waits for it.
  SPINDLE_ASSIGN_OR_RETURN(n.sn.token,
                           cluster_token(a.token_file, topo.token_file, a.rank == 0, 30));
  if (!a.join.empty()) {  // its rank and address, from rank 0's member list
    SPINDLE_ASSIGN_OR_RETURN(auto j, prepare_join(sys, topo, a, n.sn.token));
    a.rank = j.rank;
    a.address = j.address;  // its port chosen when --address gave 0
    me = j.me;
    n.coord_link = std::move(j.link);
    SPINDLE_TRY(transport::ucx::restrict_to_host(me.host));
  }
  const int rank = a.rank;
  a.door.dlrm.updates_group = rank_updates_group(a.door.dlrm.updates_group, rank);
  // What is not on this disk comes from the peers' file doors, before it is opened.
  // A rank past the TOML's (joined) has no partition of its own: it opens rank
  // 0's (rank_shard::start), so that is the one it fetches.
  const int folder = rank < int(topo.servers.size()) ? rank : 0;
  SPINDLE_ASSIGN_OR_RETURN(const auto folders, folders_of(a));
  SPINDLE_TRY(fetch_missing(a.files, folders, folder, n.sn.token));
  // Models loaded at this door from a folder: its file door serves them by name,
  // and a folder a load names that this disk lacks is fetched first.
  a.serving.loaded = std::make_shared<loaded_folders>();
  if (!a.files.fetch_from.empty())
    a.serving.fetch_loaded = [f = a.files, token = n.sn.token](const std::string& name,
                                                               const std::string& dir) {
      return fetch_loaded_folder(f, name, dir, token);
    };
  if (!a.files.fetch_from.empty()) {
    SPINDLE_TRY(check_door_folders(a));
    if (!a.serving.repository.empty())
      a.serving.fetch_versions = [f = a.files, dir = a.serving.repository,
                                  token = n.sn.token](const std::string& name) {
        return fetch_new_versions(f, dir, name, token);
      };
  }
  std::unique_ptr<transport::net::file_door> files;
  if (!a.files.files.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(files,
                             open_file_door(a.files, folders, n.sn.token, a.serving.loaded));
  }
  SPINDLE_TRY(open_type_tables(a));
  SPINDLE_TRY(open_shard(n, sys, topo, a));
  SPINDLE_TRY(open_devices(n, a));
  SPINDLE_TRY(join(n, sys, topo, me, a));
  if (n.sn.shard) n.sn.start(sys, n.coord);
  if (rank != 0 && n.bridge) {
    SPINDLE_ASSIGN_OR_RETURN(
        n.serving, start_member_serving(n.sn.context(sys, n.coord), n.self_actor, *n.bridge,
                                        a.model, a.serving));
  }
  // Behind a gate: only processes holding the cluster token reach CAF here.
  int caf_port = 0;
  SPINDLE_ASSIGN_OR_RETURN(auto gate, publish_gated(sys, n.self_actor, me, n.sn.token, &caf_port));
  fmt::print("node {} (rank {}) listening on {}:{} (CAF behind it on 127.0.0.1:{})\nready\n",
             me.name, rank, me.host, gate->port(), caf_port);
  std::fflush(stdout);
  return serve_joined(n, sys, topo, me, a, set, self_argv);
}

}  // namespace spindle::runtime
