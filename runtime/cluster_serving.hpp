// Serving across processes (`spindle node --dataset ... --model ...`). Every
// node holds its server's feature shard of the FAP plan in UCX memory and
// publishes it when it joins. A member with a model runs a pipeline (sampling,
// gathering, inference) registered at its UCX bridge. The coordinator batches
// the workload and hands batches to its own pipeline and, through the bridge,
// to the members' pipelines (one shared queue, Quiver §4.3); every pipeline
// gathers its own shard by pointer and the others one-sidedly. Its placement
// actor re-plans on drift or on request, and every node migrates its shard
// while serving (placement_sync). The answers' checksum is printed so runs can
// be compared with a single process.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/gateway.hpp"
#include "actors/placement_actor.hpp"
#include "actors/ucx_bridge.hpp"
#include "colocation/device_scheduler.hpp"
#include "core/status.hpp"
#include "runtime/rank_files.hpp"
#include "runtime/member_watch.hpp"
#include "runtime/rank_shard.hpp"
#include "runtime/placement_sync.hpp"
#include "runtime/type_tables.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::runtime {

/// What every serving node has: its shard, its view of the members (kept by
/// one watch) and its side of placement re-plans. All outlive the serving.
struct rank_context {
  caf::actor_system& sys;
  caf::actor coordinator;
  std::string token;  // the cluster token (status queries)
  rank_shard& shard;
  member_view& view;
  member_watch& watch;
  placement_sync& sync;
};

/// A member's pipeline, serving the coordinator's batches until destroyed.
struct member_serving {
  virtual ~member_serving() = default;
  /// A front door on this member (`spindle node --rank N --listen`): calls batched
  /// by its own batcher into its own pipeline, which reads the cluster's shards
  /// (its own by pointer, the others one-sidedly); the coordinator's batcher is
  /// not on the path. The batcher is started on the first call.
  /// `name` empty: the model's own name.
  virtual actors::gnn_model_binding door(std::string name,
                                         serving::admission_options admission) = 0;
};

/// How a node serves GNN batches: its pipelines (every rank of a cluster runs
/// the same number; `launch` passes one value to all) and the batch policy of
/// the batcher at its door.
struct node_pipelines {
  int pipelines = 1;  // each its own sampler and forward pass, sharing the node's pool
  serving::batch_policy batch = [] {
    serving::batch_policy b;
    b.max_batch = 16;  // a cluster's batches also cross links: smaller than one process's 64
    return b;
  }();
  /// With --device cuda: the rank's GPU executors, one per pipeline (its large
  /// executor: sampling and forward passes on the GPU; rows still come through
  /// the cluster's shards on the host). Null: the host's pool.
  std::shared_ptr<serving::device_executors> executors;
  /// GNNSched on this node: its pipelines' forward passes grouped by this policy
  /// on one shared pool of `gnnsched_bytes` (the host's memory, also on a rank
  /// with a GPU). Unset: each pipeline runs its own passes.
  std::optional<colocation::grouping_policy> gnnsched;
  std::size_t gnnsched_bytes = std::size_t(256) << 20;
  /// Times PSGS routing at start over the cluster's shards, rows from other
  /// ranks read as served (a calibration of this cluster, not of one process),
  /// and routes this node's door by it; written to `calibration_out` when set.
  bool calibrate = false;
  int calibrate_batches = 100;  // per executor
  std::string calibration_out;
  /// A `spindle calibrate` file routing this node's batches by PSGS (rank 0:
  /// the cluster's batcher; a member: its own door's); not with `calibrate`.
  std::string calibration;
  serving::routing_policy routing = serving::routing_policy::strict;
  /// --type-table-pdb: this rank's parameter server (its own folder) a typed
  /// model's large embedding tables are read from; null: held in memory.
  std::shared_ptr<type_tables> type_pdb;
  /// --model-repository: this rank's own folder of versioned models (Triton's
  /// layout) its door serves, each at the versions its policy picks.
  std::string repository;
  /// With --fetch-from: fetches the versions of a repository model that a file
  /// door holds and this rank's repository lacks, before the repository is read.
  std::function<status(const std::string& name)> fetch_versions;
  /// Models loaded at this node's door from a folder, which its file door (--files)
  /// serves by name; null: none recorded.
  std::shared_ptr<loaded_folders> loaded;
  /// With --fetch-from: fetches a model's folder (name, dir) that a load names and
  /// this rank's disk lacks, before it is loaded (the follower's loads included).
  std::function<status(const std::string& name, const std::string& dir)> fetch_loaded;
};

/// Waits until every rank owning a shard is alive, then runs `p.pipelines`
/// pipelines over `model_dir`, registers each at `bridge` and tells
/// `member_actor` it is ready.
expected<std::unique_ptr<member_serving>> start_member_serving(rank_context node,
                                                               caf::actor member_actor,
                                                               const actors::bridge_handle& bridge,
                                                               const std::string& model_dir,
                                                               const node_pipelines& p);

struct cluster_gnn_options {
  node_pipelines serving;  // every member runs as many pipelines as this node
  std::string model_dir;
  int expect = 0;           // members that must be ready before serving starts
  std::string calibration;  // a `spindle calibrate` JSON file: PSGS routing for the cluster
  serving::routing_policy policy = serving::routing_policy::fixed;
  actors::placement_options placement;
};

/// The coordinator's GNN serving over the cluster: its own pipeline and the
/// members' (through the bridge), fed by one batcher; the member watch reroutes
/// around members that die and back to those that return.
class cluster_gnn {
 public:
  /// Waits until `expect` members are ready (60 s at most), then starts.
  /// Without a calibration batches run on the fixed small executor.
  static expected<std::unique_ptr<cluster_gnn>> start(rank_context node,
                                                      const actors::bridge_handle& bridge,
                                                      const cluster_gnn_options& options);
  ~cluster_gnn();

  /// The model for the gateway (front door); `name` empty: the model's own name.
  actors::gnn_model_binding binding(std::string name, serving::admission_options admission) const;
  /// The coordinator's member list (JSON array), for Admin.members.
  std::string members_json() const;
  /// Serves `workload` requests from the in-process generator and prints
  /// "batches B here H on members M retried R", the placement's state, and then
  /// "answers N failed F checksum HEX ..." (preceded by "failed_ids ..." when some
  /// requests lost every owner of a row).
  status run_workload(std::size_t workload);

 private:
  void report_placement();
  struct parts;
  explicit cluster_gnn(std::unique_ptr<parts> p);
  std::unique_ptr<parts> p_;
};

}  // namespace spindle::runtime
