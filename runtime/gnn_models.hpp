// The GNN models one `spindle serve` process serves over its dataset: each has
// its own pipelines, batcher and router actor (over the server's calibration
// and defaults), loaded at start or later through Admin.loadModel, and stopped
// and freed by unload (after its actors have terminated). Not thread-safe: one
// caller at a time (start-up, then the RPC thread).
#pragma once

#include <caf/all.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "actors/gateway.hpp"
#include "colocation/device_scheduler.hpp"
#include "core/thread_pool.hpp"
#include "gpu/device.hpp"
#include "graph/dataset.hpp"
#include "runtime/type_tables.hpp"
#include "serving/batching.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::runtime {

struct gnn_serving_defaults {
  serving::psgs_calibration calibration;
  serving::routing_policy policy = serving::routing_policy::strict;
  serving::batch_policy batch;  // deadline and max size; the PSGS threshold follows routing
  int pipelines = 2;
  std::vector<int> fanouts;  // a --fanouts override for every model loaded; empty: their own
  std::string sampling;      // a --sampling override for every model loaded; empty: their own
  std::string precision;     // a --precision override for every model loaded; empty: their own
  serving::admission_options admission;  // the SLO and max_queue of each model
  /// GNNSched: the forward passes of every model go through one device
  /// scheduler with this grouping policy and pool; unset: each pipeline computes alone.
  std::optional<colocation::grouping_policy> gnnsched;
  std::size_t gnnsched_bytes = 256u << 20;
  /// Set when the flag was given: it overrides the model.toml's serving settings.
  bool max_batch_from_flag = false, deadline_from_flag = false, slo_from_flag = false;
  std::string repository;  // --model-repository DIR; empty: none
  /// --device: cuda gives each pipeline a GPU large executor (sampling, gather
  /// and layers on the device) made by `executors`, which serve creates once
  /// (--gpus, --topology, --device-feature-mb) and also calibrates with.
  gpu::device_kind device = gpu::device_kind::host;
  serving::device_executors executors;
  /// --calibrate-loads: every model loaded after start-up is timed on itself
  /// as it loads, this many batches per executor (0: it routes by `calibration`).
  int calibrate_loads_batches = 0;
  /// --type-table-pdb: typed models' large embedding tables are read from this
  /// parameter server instead of held (null: every table in memory).
  std::shared_ptr<type_tables> type_pdb;
  /// Run to completion (serving/express_lane): batches of at most this many
  /// calls that find their model idle run on the door thread that read them
  /// (--express-max-requests; 0: every call goes through the batcher). Not
  /// with GNNSched, whose passes the device scheduler groups.
  std::size_t express_max_requests = 1;
};

class gnn_models {
 public:
  /// Fails when the GNNSched pool cannot be reserved.
  static expected<std::unique_ptr<gnn_models>> create(caf::actor_system& sys,
                                                      const graph::dataset& ds, thread_pool& pool,
                                                      gnn_serving_defaults defaults);
  ~gnn_models();  // stops every model
  gnn_models(const gnn_models&) = delete;
  gnn_models& operator=(const gnn_models&) = delete;

  /// Loads the model directory `path` as `name` (empty: the name in its
  /// model.toml) and starts its actors. Fails naming the path when it is not a
  /// GNN whose input width is the dataset's.
  expected<actors::gnn_model_binding> load(const std::string& name, const std::string& path);
  /// Stops `name`'s actors, waits for them, and frees the model.
  void unload(const std::string& name);
  /// The loader the gateway calls for Admin.loadModel / unloadModel (and KServe's
  /// repository load/unload): a load without a path takes the repository's
  /// version of the name, served under the key NAME@VERSION.
  actors::model_loader loader();
  /// Loads every model of the repository (each at its policy's version).
  expected<std::vector<actors::gnn_model_binding>> load_repository();
  /// Start-up is over: from now on a model loaded is calibrated on itself when
  /// the defaults say so (calibrate_loads_batches), as the server was at start.
  /// The parameter server's tables no start model reads are then dropped
  /// (type_tables::started).
  void started() {
    started_ = true;
    if (defaults_.type_pdb) defaults_.type_pdb->started();
  }

 private:
  gnn_models(caf::actor_system& sys, const graph::dataset& ds, thread_pool& pool,
             gnn_serving_defaults defaults);
  struct served;
  expected<serving::psgs_calibration> routing_of(const std::string& name, const nn::model& m);
  caf::actor_system& sys_;
  const graph::dataset& ds_;
  thread_pool& pool_;
  gnn_serving_defaults defaults_;
  std::unique_ptr<thread_pool> device_workers_;  // "gnnsched-w": where groups run
  std::unique_ptr<colocation::device_scheduler> device_;
  std::map<std::string, std::unique_ptr<served>> models_;
  bool started_ = false;
};

}  // namespace spindle::runtime
