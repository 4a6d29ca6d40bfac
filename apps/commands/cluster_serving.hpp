// Serving across processes (`spindle node --dataset ... --model ...`). Every
// node holds its server's feature shard of the FAP plan in UCX memory and
// publishes it when it joins. A member with a model runs a pipeline (sampling,
// gathering, inference) registered at its UCX bridge. The coordinator batches
// the workload and hands batches to its own pipeline and, through the bridge,
// to the members' pipelines (one shared queue, Quiver §4.3); every pipeline
// gathers its own shard by pointer and the others one-sidedly. The answers'
// checksum is printed so runs can be compared with a single process.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>

#include "actors/gateway.hpp"
#include "actors/ucx_bridge.hpp"
#include "config/topology.hpp"
#include "core/status.hpp"
#include "sched/psgs_router.hpp"

namespace spindle::apps {

/// Keeps a node's shard memory and progress loop alive; `descriptor` is published.
struct shard_service {
  virtual ~shard_service() = default;
  std::string descriptor;
  const std::byte* rows = nullptr;  // the shard, for this process's own pipeline
};

/// Allocates and fills rank `rank`'s host-memory shard of the plan for `dataset`.
expected<std::unique_ptr<shard_service>> start_shard(const config::topology& topo,
                                                     const std::string& dataset, int rank);

/// A member's pipeline, serving the coordinator's batches until destroyed.
struct member_serving {
  virtual ~member_serving() = default;
};

/// Waits until every rank owning a shard is alive, then runs a pipeline over
/// `model_dir`, registers it at `bridge` and tells `member_actor` it is ready.
expected<std::unique_ptr<member_serving>> start_member_serving(
    caf::actor_system& sys, caf::actor coordinator, caf::actor member_actor,
    const actors::bridge_handle& bridge, const shard_service& shard, const config::topology& topo,
    const std::string& dataset, const std::string& model_dir, int rank);

/// The coordinator's GNN serving over the cluster: its own pipeline and the
/// members' (through the bridge), fed by one batcher; a member watch reroutes
/// around members that die and back to those that return.
class cluster_gnn {
 public:
  /// Waits until `expect` members are ready (60 s at most), then starts.
  /// `calibration` (a `spindle calibrate` JSON file) with `policy` routes batches by
  /// PSGS for every pipeline of the cluster; without it the fixed small executor.
  static expected<std::unique_ptr<cluster_gnn>> start(
      caf::actor_system& sys, caf::actor coordinator, const actors::bridge_handle& bridge,
      const shard_service& own, const config::topology& topo, const std::string& dataset,
      const std::string& model_dir, int expect, const std::string& calibration = {},
      sched::routing_policy policy = sched::routing_policy::fixed);
  ~cluster_gnn();

  /// The model for the gateway (front door); `name` empty: the model's own name.
  actors::gnn_model_binding binding(std::string name, std::size_t max_queue) const;
  /// The coordinator's member list (JSON array), for Admin.members.
  std::string members_json() const;
  /// Serves `workload` requests from the in-process generator and prints
  /// "batches B here H on members M retried R" and then
  /// "answers N failed F checksum HEX ..." (preceded by "failed_ids ..." when some
  /// requests lost every owner of a row).
  status run_workload(std::size_t workload);

 private:
  struct parts;
  explicit cluster_gnn(std::unique_ptr<parts> p);
  std::unique_ptr<parts> p_;
};

}  // namespace spindle::apps
