// What a cluster node's GNN serving is made of, shared by the cluster's GNN
// (cluster_serving) and the GNNs loaded at run time at a node's door
// (door_gnns): the model and its router kept alive together, the node's pool
// and GNNSched, its pipelines over the cluster's shards, a calibration over
// the cluster, and stopping actors before what they read is freed.
#pragma once

#include <caf/all.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "colocation/device_scheduler.hpp"
#include "core/thread_pool.hpp"
#include "graph/dataset.hpp"
#include "nn/model.hpp"
#include "runtime/cluster_features.hpp"
#include "runtime/cluster_serving.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::runtime {

// What one serving process loads besides its shard: the model, kept alive together.
struct serving_assets {
  serving_assets() = default;
  serving_assets(const serving_assets&) = delete;
  serving_assets& operator=(const serving_assets&) = delete;
  /// Frees the model's weights on the rank's GPU (kept by the model's address,
  /// which the next model loaded may reuse). Its owners stop the pipelines first.
  ~serving_assets() {
    if (executors && model) executors->forget(*model);
  }
  nn::heap_allocator weights;
  std::unique_ptr<nn::model> model;
  std::shared_ptr<serving::psgs_router> router =
      std::make_shared<serving::psgs_router>(serving::psgs_calibration{}, serving::routing_policy::fixed);
  thread_pool pool{0, "node"};
  std::unique_ptr<thread_pool> device_workers;         // GNNSched's, when on
  std::unique_ptr<colocation::device_scheduler> device;     // its pipelines' passes, grouped
  std::shared_ptr<serving::device_executors> executors;     // the rank's GPU (--device cuda)
  nn::type_table_stats_fn type_tables;  // its tables on the parameter server (--type-table-pdb)
};

/// Loads `model_dir` (refusing fanouts no layer fits `ds`; with `p.type_pdb`,
/// its large typed tables read from there) and, with `p.gnnsched`, the node's
/// GNNSched scheduler.
expected<std::unique_ptr<serving_assets>> load_assets(const std::string& model_dir,
                                                      const graph::dataset& ds,
                                                      const node_pipelines& p);

/// Quiver §4.2.1's calibration with this node's view of the features (see the
/// definition); routes `a` by it and sets `policy`'s PSGS batch-closing point.
status calibrate_over_cluster(serving_assets& a, serving::batch_policy& policy,
                              const rank_shard& shard, const member_view& view,
                              const std::map<int, member_info>& members,
                              const node_pipelines& p);

/// A rank with a GPU (`a.executors`): fills its device tier through a reader of
/// its own (once per rank; the rows count in no observed FAP).
status fill_device_rows(serving_assets& a, const rank_shard& shard, const member_view& view,
                        const std::map<int, member_info>& members);

/// Stops `a` and waits until it has terminated.
void stop_and_wait(caf::actor_system& sys, const caf::actor& a);
/// The same for a typed handle (a pipeline, a batcher).
template <class... Sigs>
void stop_and_wait(caf::actor_system& sys, const caf::typed_actor<Sigs...>& a) {
  stop_and_wait(sys, caf::actor_cast<caf::actor>(a));
}

/// `n` pipelines over `f`, sharing `a`'s pool (and GNNSched, when on); with the
/// rank's GPU executors, each its own as its large executor.
expected<std::vector<actors::pipeline_actor>> spawn_pipelines(caf::actor_system& sys,
                                                              const graph::dataset& ds,
                                                              serving_assets& a,
                                                              cluster_features& f, int n);

}  // namespace spindle::runtime
