// A cluster node's front door: the cluster's GNN, GNNs loaded at any door and
// recommendation models (its own or forwarded to plan servers); a member's door
// outlives its coordinator and stops for the rejoin. Runs on the calling thread.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/gateway.hpp"
#include "config/topology.hpp"
#include "runtime/cluster_node.hpp"
#include "runtime/door_gnns.hpp"

namespace spindle::runtime {

/// Whether the node serves recommendation models (its own or forwarded).
bool serves_rec(const node_args& a);

/// Serves the door of `a` until a stop signal (see serve_until_signal for
/// `also`, `on_also` and `stopped_by`). Admin loads of recommendation models
/// reach this node; GNN loads go through `gnns` to every node with a door.
status serve_door(caf::actor_system& sys, const node_args& a, rank_shard* shard,
                  std::optional<actors::gnn_model_binding> gnn,
                  std::function<std::string()> members, std::shared_ptr<door_gnns> gnns,
                  const std::vector<int>& also = {},
                  const std::function<bool(int)>& on_also = nullptr, int* stopped_by = nullptr);

/// A node's own door (a member's, or a node of recommendation models only) on
/// rank `rank`. A member's door keeps answering while the coordinator is gone;
/// once it is back the door stops with *stopped_by = kCoordinatorBack, for the
/// caller to rejoin (re-executing itself, the door opening again in the new image).
status serve_node_door(caf::actor_system& sys, const node_args& a, rank_shard* shard,
                       std::optional<actors::gnn_model_binding> gnn,
                       std::function<std::string()> members, std::shared_ptr<door_gnns> gnns,
                       const config::topology& topo, int rank, int* stopped_by);

}  // namespace spindle::runtime
