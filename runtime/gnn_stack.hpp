// The one-process serving stack of `spindle serve`: dataset, GPU executors, PSGS
// routing, the GNN models and their doors (or an in-process workload); a server
// of recommendation models only has no dataset. Called from one thread.
#pragma once

#include <functional>
#include <string>

#include "actors/batcher_actor.hpp"
#include "actors/load_client.hpp"
#include "colocation/device_scheduler.hpp"
#include "core/thread_pool.hpp"
#include "runtime/graph_updates.hpp"
#include "runtime/serve_rpc.hpp"
#include "runtime/type_tables.hpp"

namespace spindle::runtime {

struct gnn_stack_args {
  std::string dataset, model, calibration, policy = "strict";
  int calibrate_loads = 0;  // --calibrate-loads N: time a GNN loaded later, N batches per executor
  int deadline_us = 2000, max_batch = 64, pipelines = 2;
  int split_min = 16;  // --split-min: a burst dealt out to idle pipelines (0: never)
  int express_max_requests = 1;  // --express-max-requests: run to completion on the door (0: off)
  std::string name;      // model name for RPC calls (default: model.toml's)
  std::string gnnsched;  // GNNSched grouping policy for the forward passes, or empty
  std::size_t gnnsched_mb = 256;
  std::string fanouts;          // overrides model.toml's (and the dataset's) fanouts
  std::string sampling;         // overrides model.toml's sampling mode
  std::string precision;        // --precision fp32|bf16: overrides model.toml's (empty: its own)
  std::string repository;       // --model-repository DIR
  std::string device = "auto";  // --device auto|host|cuda
  std::size_t device_feature_mb = 1024;
  int gpus = 1;              // --gpus: GPUs the pipelines are dealt over
  std::string gpu_topology;  // --topology: its intra link partitions or replicates
  bool max_batch_flag = false, deadline_flag = false, slo_flag = false;  // given explicitly
  bool no_verify_data = false;  // skip the dataset's checksums at start
  graph_update_args graph;      // --graph-updates, --graph-log*, --graph-stream*
  type_table_args type_tables;  // --type-table-*: large typed tables on the parameter server
};

/// Requests from the in-process generator instead of the doors (requests > 0).
struct gnn_workload {
  std::size_t requests = 0;
  double rate = 0;            // open-loop requests per second (0: closed loop)
  int clients = 8;            // outstanding requests in closed loop
  bool reproducible = false;  // the requests carry sampler seeds
};

/// What a workload measured, given to the caller while the stack still runs.
using workload_report = std::function<void(const actors::load_result&, const actors::batcher_stats&,
                                           const colocation::device_scheduler*)>;

/// Serves the GNNs of `a` (and `door`'s recommendation models) until a stop
/// signal; with `w.requests` > 0, drives them through the first model instead
/// and hands what they measured to `report`. Errors name the flag or the file.
status serve_gnn_stack(const gnn_stack_args& a, const front_door_args& door, const gnn_workload& w,
                       thread_pool& pool, const workload_report& report);

/// A server of recommendation models only (no dataset, no GNN): the doors of
/// `door` until a stop signal.
status serve_recommendations(const front_door_args& door);

}  // namespace spindle::runtime
