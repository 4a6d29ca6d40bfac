#include "runtime/gnn_models.hpp"

#include <fmt/ranges.h>

#include "actors/batcher_actor.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/router_actor.hpp"
#include "core/log.hpp"
#include "nn/model.hpp"
#include "runtime/model_repository.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/edge_attr_rows.hpp"
#include "serving/gnn_pipeline.hpp"
#include "serving/psgs_calibrate.hpp"
#include "serving/typed_calls.hpp"

namespace spindle::runtime {

// One model and the actors serving it; the actors read the model and router.
struct gnn_models::served {
  nn::heap_allocator weights;
  std::unique_ptr<nn::model> model;
  std::shared_ptr<serving::psgs_router> router;
  std::vector<actors::pipeline_actor> pipelines;
  actors::batcher_actor batcher;
  actors::router_actor routing;
  std::shared_ptr<serving::express_lane> express;  // null: none
};

gnn_models::gnn_models(caf::actor_system& sys, const graph::dataset& ds, thread_pool& pool,
                       gnn_serving_defaults defaults)
    : sys_(sys), ds_(ds), pool_(pool), defaults_(std::move(defaults)) {}

expected<std::unique_ptr<gnn_models>> gnn_models::create(caf::actor_system& sys,
                                                         const graph::dataset& ds,
                                                         thread_pool& pool,
                                                         gnn_serving_defaults defaults) {
  std::unique_ptr<gnn_models> m(new gnn_models(sys, ds, pool, std::move(defaults)));
  ds.warm_features();  // no page fault on a row's first read while serving
  const auto device = m->defaults_.device;
  if (device == gpu::device_kind::cuda && m->defaults_.executors.gpus() == 0)
    return make_error(errc::invalid_argument, "--device cuda: no GPU executors were created");
  if (m->defaults_.gnnsched) {  // on a GPU the pool is device memory, a stream per task
    m->device_workers_ = std::make_unique<thread_pool>(0, "gnnsched-w");
    SPINDLE_ASSIGN_OR_RETURN(m->device_, colocation::device_scheduler::create(
                                             m->defaults_.gnnsched_bytes, *m->device_workers_,
                                             *m->defaults_.gnnsched, device));
  }
  return m;
}

namespace {
// What a served model's answers depend on, stated once at load: its layers, the
// fanouts in force (-1: every neighbour), how requests share sampled graphs and
// the PSGS routing point.
void log_served_model(const std::string& name, const std::string& path, const nn::model& m,
                      const graph::dataset& ds, const serving::psgs_router& router) {
  const auto fanouts = serving::served_fanouts(m.desc(), ds.metadata());
  log::info("serving GNN '{}' from {}: {}; precision {}; fanouts [{}]; sampling {}{}; PSGS "
            "routing point {:.0f}",
            name, path, config::summary(m.desc()), m.precision(),
            fanouts ? fmt::format("{}", fmt::join(*fanouts, ", ")) : "?",
            m.desc().sampling == "per_request"
                ? "per_request (each call sampled on its own, seeded by its seeds)"
                : "shared (a call without a sampler seed shares its batch's sampled graph)",
            m.graph_degrees() ? "; GCN normalised by the graph's degrees" : "", router.threshold());
}
}  // namespace

// Quiver §4.2.1's calibration of a model loaded after start-up, on itself,
// with --calibrate-loads; else (or when the model cannot be timed, said in the
// log) the server's calibration.
expected<serving::psgs_calibration> gnn_models::routing_of(const std::string& name,
                                                           const nn::model& m) {
  if (!started_ || defaults_.calibrate_loads_batches <= 0) return defaults_.calibration;
  serving::calibrate_options o;
  o.batches = defaults_.calibrate_loads_batches;
  SPINDLE_ASSIGN_OR_RETURN(o.device, defaults_.executors.make());  // the one that will serve
  log::info("calibrating PSGS routing for '{}' as it loads ({} batches per executor)", name,
            o.batches);
  auto c = serving::calibrate(ds_, m, o, pool_);
  if (!c) {
    log::warn("'{}' routes by the server's calibration: timing it failed: {}", name,
              c.error().message());
    return defaults_.calibration;
  }
  log::info("PSGS routing of '{}' calibrated: {}", name, c->summary());
  return c;
}

gnn_models::~gnn_models() {
  while (!models_.empty()) unload(models_.begin()->first);
}

expected<actors::gnn_model_binding> gnn_models::load(const std::string& given_name,
                                                     const std::string& path) {
  auto s = std::make_unique<served>();
  type_table_set type_rows;  // large typed tables read from the parameter server
  if (defaults_.type_pdb) {
    SPINDLE_ASSIGN_OR_RETURN(type_rows, defaults_.type_pdb->readers(path));
  }
  SPINDLE_ASSIGN_OR_RETURN(
      auto model, nn::model::load(path, s->weights, false, {}, std::move(type_rows.readers)));
  const std::string name = given_name.empty() ? model.desc().name : given_name;
  if (models_.count(name))
    return make_error(errc::invalid_argument, "name '{}' is already loaded", name);
  if (model.desc().is_gnn() && (model.desc().typed() || ds_.typed())) {
    // Typed: node types, widths and edge types bound by name (serving/typed_calls.hpp).
    if (auto map = serving::relation_map(ds_, model.desc()); !map)
      return std::move(map).error().with_context(path + ": ");
  } else if (!model.desc().is_gnn() || model.desc().in != ds_.feature_dim()) {
    return make_error(errc::invalid_argument,
                      "{}: model input width {} does not match the dataset's {} features", path,
                      model.desc().in, ds_.feature_dim());
  }
  SPINDLE_TRY(std::move(serving::check_edge_attr(ds_, model)).with_context(path + ": "));
  if (!defaults_.fanouts.empty())
    SPINDLE_TRY(std::move(model.set_fanouts(defaults_.fanouts)).with_context(path + ": "));
  if (!defaults_.sampling.empty())
    SPINDLE_TRY(std::move(model.set_sampling(defaults_.sampling)).with_context(path + ": "));
  if (!defaults_.precision.empty())
    SPINDLE_TRY(std::move(model.set_precision(defaults_.precision)).with_context(path + ": "));
  if (auto note = model.slow_precision_note(name); !note.empty()) log::warn("{}", note);
  // Fanouts belong to the model; refuse one whose layers nothing fits (no silent default).
  if (auto f = serving::served_fanouts(model.desc(), ds_.metadata()); !f)
    return std::move(f).error().with_context(path + "/model.toml: ");
  s->model = std::make_unique<nn::model>(std::move(model));
  SPINDLE_ASSIGN_OR_RETURN(auto calibration, routing_of(name, *s->model));
  s->router = std::make_shared<serving::psgs_router>(std::move(calibration), defaults_.policy);
  log_served_model(name, path, *s->model, ds_, *s->router);
  bool device_routed = false;
  for (int i = 0; i < std::max(1, defaults_.pipelines); ++i) {
    // A GPU's, with --device cuda (one per pipeline: an executor serves one at a
    // time; the graph, feature tiers and weights on the device are shared).
    SPINDLE_ASSIGN_OR_RETURN(auto large, defaults_.executors.make());
    device_routed = device_routed || large != nullptr;
    s->pipelines.push_back(actors::spawn_pipeline(sys_, ds_, *s->model, *s->router, pool_, {},
                                                  device_.get(), std::move(large)));
  }
  auto bp = defaults_.batch;
  auto admission = defaults_.admission;
  const auto& desc = s->model->desc();  // a repository model.toml's serving settings
  if (desc.max_batch > 0 && !defaults_.max_batch_from_flag)
    bp.max_batch = std::size_t(desc.max_batch);
  if (desc.batch_deadline_us > 0 && !defaults_.deadline_from_flag)
    bp.deadline = std::chrono::microseconds(desc.batch_deadline_us);
  if (desc.slo_ms > 0 && !defaults_.slo_from_flag)
    admission.slo = std::chrono::milliseconds(desc.slo_ms);
  // GNNSched: a pipeline samples its next batch while its last pass waits for a group.
  if (device_) bp.pipeline_depth = 2;
  // A batch also closes once its summed PSGS passes the routing point (Quiver §4.2.2).
  bp.psgs_threshold = actors::batch_close_threshold(s->router->threshold());
  const auto* ds = &ds_;
  s->batcher =
      actors::spawn_batcher(sys_, s->pipelines, bp, s->router,
                            [ds](const serving::gnn_request& r) { return summed_psgs(*ds, r); });
  s->routing = actors::spawn_router(sys_, s->router, s->batcher);
  actors::gnn_model_binding b{name, s->batcher, &ds_, s->model.get(), s->router, bp, admission};
  b.routing = s->routing;
  b.device = device_.get();
  if (!device_) {  // with 0 requests it runs nothing until the tunable says otherwise
    serving::express_lane::limits l;
    l.max_requests = defaults_.express_max_requests;
    l.device_routed = device_routed;
    s->express = std::make_shared<serving::express_lane>(ds_, *s->model, *s->router, pool_, l);
    s->express->set_work_conserving(bp.work_conserving);
    b.express = s->express;
  }
  b.type_tables = std::move(type_rows.stats);
  models_[name] = std::move(s);
  return b;
}

void gnn_models::unload(const std::string& name) {
  auto it = models_.find(name);
  if (it == models_.end()) return;
  auto& s = *it->second;
  caf::scoped_actor self{sys_};
  std::vector<caf::actor> all;
  for (const auto& p : s.pipelines) all.push_back(caf::actor_cast<caf::actor>(p));
  all.push_back(caf::actor_cast<caf::actor>(s.batcher));
  all.push_back(caf::actor_cast<caf::actor>(s.routing));
  for (auto& a : all) self->send_exit(a, caf::exit_reason::user_shutdown);
  // The pipelines read the model: it is freed only after they have terminated.
  for (auto& a : all) self->wait_for(a);
  if (s.express) s.express->close();  // its pipeline reads the model too
  defaults_.executors.forget(*s.model);
  models_.erase(it);
}

actors::model_loader gnn_models::loader() {
  actors::model_loader l;
  l.load = [this](const std::string& name,
                  const std::string& path) -> expected<actors::gnn_model_binding> {
    if (path.empty())
      return make_error(errc::invalid_argument,
                        "load '{}': give the model directory (this server has no "
                        "--model-repository)",
                        name);
    return load(name, path);
  };
  l.unload = [this](const std::string& key) {
    unload(key);
    // A roll's old version gone: its tables, if another version reads that tensor.
    if (defaults_.type_pdb) defaults_.type_pdb->sweep();
  };
  if (defaults_.repository.empty()) return l;
  l.versions_to_serve = [this](const std::string& name) {
    return repository_versions_to_serve(defaults_.repository, name);
  };
  l.load_version = [this](const std::string& name,
                          const std::string& version) -> expected<actors::gnn_model_binding> {
    SPINDLE_ASSIGN_OR_RETURN(auto dir, repository_version_dir(defaults_.repository, name, version));
    const std::string key = fmt::format("{}@{}", name, version);
    SPINDLE_ASSIGN_OR_RETURN(auto b, load(key, dir));
    b.name = name;
    b.key = key;
    b.version = version;
    return b;
  };
  return l;
}

expected<std::vector<actors::gnn_model_binding>> gnn_models::load_repository() {
  SPINDLE_ASSIGN_OR_RETURN(auto all, scan_repository(defaults_.repository));
  std::vector<actors::gnn_model_binding> out;
  auto l = loader();
  for (const auto& [name, _] : all) {
    auto versions = l.versions_to_serve(name);
    if (!versions) return std::move(versions).error().with_context("model repository: ");
    for (const auto& v : *versions) {
      auto b = l.load_version(name, v);
      if (!b) return std::move(b).error().with_context("model repository: ");
      out.push_back(std::move(*b));
    }
  }
  return out;
}

}  // namespace spindle::runtime
