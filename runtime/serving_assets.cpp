#include "runtime/serving_assets.hpp"

#include <fstream>

#include "actors/batcher_actor.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/router_actor.hpp"
#include "core/log.hpp"
#include "runtime/rank_shard.hpp"
#include "serving/gnn_pipeline.hpp"
#include "serving/psgs_calibrate.hpp"

namespace spindle::runtime {

expected<std::unique_ptr<serving_assets>> load_assets(const std::string& model_dir,
                                                      const graph::dataset& ds,
                                                      const node_pipelines& p) {
  auto a = std::make_unique<serving_assets>();
  type_table_set type_rows;  // large typed tables read from this rank's parameter server
  if (p.type_pdb) {
    SPINDLE_ASSIGN_OR_RETURN(type_rows, p.type_pdb->readers(model_dir));
  }
  SPINDLE_ASSIGN_OR_RETURN(
      auto model, nn::model::load(model_dir, a->weights, false, {}, std::move(type_rows.readers)));
  a->type_tables = std::move(type_rows.stats);
  // A node loads its start model first: other weights' tables no model reads go now.
  if (p.type_pdb) p.type_pdb->started();
  // Fanouts belong to the model; refuse one whose layers nothing fits.
  if (auto f = serving::served_fanouts(model.desc(), ds.metadata()); !f)
    return std::move(f).error().with_context(model_dir + "/model.toml: ");
  a->model = std::make_unique<nn::model>(std::move(model));
  a->executors = p.executors;
  // A rank with a GPU routes every batch to it until a calibration (--calibrate,
  // --calibration) lets PSGS choose between the host and the GPU.
  if (a->executors) a->router->set_fixed(serving::psgs_router::choice::large);
  if (p.gnnsched) {
    a->device_workers = std::make_unique<thread_pool>(0, "gnnsched-w");
    SPINDLE_ASSIGN_OR_RETURN(a->device, colocation::device_scheduler::create(
                                            p.gnnsched_bytes, *a->device_workers, *p.gnnsched));
  }
  return a;
}

// Quiver §4.2.1's calibration with this node's view of the features: the rows
// of other ranks are read as served (mapped shared memory or one-sided reads),
// through a reader of its own so the calibration batches do not count in the
// observed FAP that re-plans placement. Routes by it from now on.
status calibrate_over_cluster(serving_assets& a, serving::batch_policy& policy,
                              const rank_shard& shard, const member_view& view,
                              const std::map<int, member_info>& members,
                              const node_pipelines& p) {
  SPINDLE_ASSIGN_OR_RETURN(auto reader, cluster_features::create(shard, view, &members));
  serving::calibrate_options o;
  o.batches = p.calibrate_batches;
  o.features = reader->source();
  if (a.executors) {  // PSGS then picks between the host's small executor and the GPU
    SPINDLE_TRY(a.executors->fill_rows(reader->source()));
    SPINDLE_ASSIGN_OR_RETURN(o.device, a.executors->make());
  }
  log::info("rank {}: calibrating PSGS routing over the cluster's shards ({} batches per "
            "executor)",
            shard.rank(), o.batches);
  auto c = serving::calibrate(shard.dataset(), *a.model, o, a.pool);
  if (!c) return std::move(c).error().with_context("--calibrate: ");
  log::info("rank {}: PSGS routing calibrated over the cluster: {} ({} remote rows read)",
            shard.rank(), c->summary(), reader->remote_rows());
  if (!p.calibration_out.empty()) {
    std::ofstream out(p.calibration_out);
    out << c->to_json() << "\n";
    if (!out)
      return make_error(errc::io_error, "--calibration-out {}: cannot write", p.calibration_out);
    log::info("rank {}: wrote the cluster's calibration to {}", shard.rank(), p.calibration_out);
  }
  a.router = std::make_shared<serving::psgs_router>(std::move(*c), p.routing);
  policy.psgs_threshold = actors::batch_close_threshold(a.router->threshold());
  return status::ok();
}

// A rank with a GPU: its device tier's rows, read once through a reader of their
// own (so they count in no observed FAP), before its first pipelines start.
status fill_device_rows(serving_assets& a, const rank_shard& shard, const member_view& view,
                        const std::map<int, member_info>& members) {
  if (!a.executors || a.executors->rows_ready()) return status::ok();
  SPINDLE_ASSIGN_OR_RETURN(auto reader, cluster_features::create(shard, view, &members));
  return a.executors->fill_rows(reader->source());
}

// Stops `a` and waits until it has terminated, so nothing it references is
// freed under a batch it is still running (exit messages are asynchronous).
void stop_and_wait(caf::actor_system& sys, const caf::actor& a) {
  if (!a) return;
  caf::scoped_actor self{sys};
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->wait_for(a);
}

// `n` pipelines over the node's cluster features, sharing the node's pool; on a
// rank with a GPU, each with a GPU executor of its own as its large executor.
expected<std::vector<actors::pipeline_actor>> spawn_pipelines(caf::actor_system& sys,
                                                              const graph::dataset& ds,
                                                              serving_assets& a,
                                                              cluster_features& f, int n) {
  std::vector<actors::pipeline_actor> out;
  for (int i = 0; i < std::max(1, n); ++i) {
    std::shared_ptr<serving::batch_executor> large;
    if (a.executors) {
      SPINDLE_ASSIGN_OR_RETURN(large, a.executors->make());
    }
    out.push_back(actors::spawn_pipeline(sys, ds, *a.model, *a.router, a.pool, f.source(),
                                         a.device.get(), std::move(large)));
  }
  return out;
}

}  // namespace spindle::runtime
