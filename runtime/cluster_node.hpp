// One node of a cluster (`spindle node`, rank 0 the coordinator): its shard in
// UCX memory, its membership behind the token gate, pipelines for the
// coordinator's batches, a workload or a door. Runs on the calling thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/placement_actor.hpp"
#include "core/status.hpp"
#include "runtime/cluster_serving.hpp"
#include "runtime/graph_updates.hpp"
#include "runtime/rank_files.hpp"
#include "runtime/serve_rpc.hpp"

namespace spindle::runtime {

struct node_args {
  std::string config, dataset, model;
  int rank = -1;    // -1: from the launcher's environment (config/launcher_rank.hpp)
  int expect = -1;  // -1: 0, or with the rank from the environment the TOML's other ranks
  std::string token_file;  // --token-file: the cluster token (else SPINDLE_CLUSTER_TOKEN)
  std::size_t workload = 0;
  std::string policy = "strict";  // PSGS routing by serving.calibration or serving.calibrate
  front_door_args door;           // with --listen: this node's door (rank 0's: the front door)
  bool listen = false;
  bool no_verify_data = false;           // skip the rank's data checksums at start
  actors::placement_options placement;   // rank 0: re-plan on drift
  std::uint32_t peer_timeout_ms = 1000;  // a peer silent this long is declared down
  node_pipelines serving;                // pipelines and the door's batch policy
  std::string name;                      // the GNN's name at the door (default: model.toml's)
  std::vector<std::string> forwards;     // --forward NAME=HOST:PORT,...: served elsewhere
  graph_update_args graph;               // --graph-updates from --graph-stream
  rank_files_args files;                 // --files, --fetch-from: folders from peers
  /// The flags given that only rank 0 honours (--expect, --workload,
  /// --replan-*): any other rank refuses them by name rather than ignore them.
  std::vector<std::string> coordinator_flags;
  /// --join HOST:PORT: join the running cluster whose rank 0 listens there, as a
  /// rank past the TOML's (--rank, or the next free one); the placement re-plans
  /// with it and its door opens once it serves its shard of that plan.
  std::string join;
  std::string address = "127.0.0.1:0";  // --address: a joining rank's own HOST:PORT
  std::string device = "host";  // --device cuda: a GPU executor per pipeline (see open_devices)
  std::size_t device_feature_mb = 1024;  // --device-feature-mb: its device tier
  /// --type-table-*: a typed model's large embedding tables read from this rank's
  /// own parameter-server folder (opened into serving.type_pdb once the model is here).
  type_table_args type_tables;
};

/// The flags of `coordinator_flags` rank 0 alone honours; another rank given
/// one gets an error naming it (checked before the node starts anything).
status refuse_coordinator_flags(const node_args& a);

/// The consumer group of rank `rank`'s online embedding updates: a group given
/// to every rank becomes GROUP.rank-N, so each rank's PDB takes every update.
std::string rank_updates_group(const std::string& group, int rank);

/// Runs the node until its workload is done or a stop signal comes; prints
/// "node NAME (rank R) listening on HOST:PORT ..." and "ready" once it has
/// joined. A member that lost its coordinator re-executes itself with
/// `self_argv` once rank 0 listens again.
status run_node(const node_args& a, const std::vector<std::string>& self_argv);

}  // namespace spindle::runtime
