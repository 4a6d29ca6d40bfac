#include "runtime/node_door.hpp"

#include <atomic>
#include <thread>

#include "core/log.hpp"
#include "runtime/coordinator_loss.hpp"
#include "runtime/door_stack.hpp"
#include "runtime/model_repository.hpp"
#include "runtime/model_follower.hpp"
#include "runtime/rec_forwarder.hpp"

namespace spindle::runtime {

bool serves_rec(const node_args& a) {
  return !a.door.rec_models.empty() || !a.door.dlrm.model.empty() || !a.forwards.empty();
}

namespace {

// --model-repository: every model of `dir` at the versions its policy picks,
// as a load without a directory at the door does (the list learns each).
// (run_node checked it holds a model before the rank started).
status load_repository(actors::gateway& gw, const std::string& dir) {
  SPINDLE_ASSIGN_OR_RETURN(auto all, scan_repository(dir));
  for (const auto& [name, _] : all) {
    SPINDLE_TRY(gw.load_model(name, "").with_context("--model-repository " + dir + ": "));
    log::info("model repository: serving '{}'", name);
  }
  return status::ok();
}

}  // namespace

// Every node serves the recommendation models of --rec-model and --dlrm-model
// on its own (tables in its memory; a DLRM with its own L1 cache and PDB, its
// VDB where --vdb says, a shared Redis giving every node the same level 2).
status serve_door(caf::actor_system& sys, const node_args& a, rank_shard* shard,
                  std::optional<actors::gnn_model_binding> gnn,
                  std::function<std::string()> members, std::shared_ptr<door_gnns> gnns,
                  const std::vector<int>& also, const std::function<bool(int)>& on_also,
                  int* stopped_by) {
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
  if (!a.serving.repository.empty()) {  // with a shard: run_node checked the flags
    s.before_serving = [dir = a.serving.repository](actors::gateway& gw) {
      return load_repository(gw, dir);
    };
  }
  s.members = std::move(members);
  s.while_serving = [gnns](actors::gateway& gw) {  // loads at other doors
    return std::shared_ptr<void>(std::make_shared<model_follower>(gw, *gnns));
  };
  return serve_door_stack(sys, a.door, std::move(s), token, also, on_also, stopped_by);
}

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
  const auto served = serve_door(sys, a, shard, std::move(gnn), std::move(members), std::move(gnns),
                                 signals, on_signal, stopped_by);
  done = true;
  if (watcher.joinable()) watcher.join();
  return served;
}

}  // namespace spindle::runtime
