#include "runtime/gnn_stack.hpp"

#include "actors/scheduler_config.hpp"
#include "config/topology.hpp"
#include "core/log.hpp"
#include "core/text_file.hpp"
#include "runtime/door_stack.hpp"
#include "runtime/gnn_models.hpp"
#include "runtime/model_repository.hpp"
#include "serving/gnn_pipeline.hpp"
#include "serving/psgs_calibrate.hpp"
#include "serving/typed_calls.hpp"
#include "transport/ucx/net_devices.hpp"

namespace spindle::runtime {
namespace {

// --gpus and --topology: how many GPUs, and whether their links (the topology's
// intra link, as Quiver's placement reads it) partition the device tier.
expected<serving::gpu_layout> gpu_layout_of(const gnn_stack_args& a, gpu::device_kind device) {
  serving::gpu_layout layout;
  layout.gpus = a.gpus;
  if (a.gpus > 1 && device != gpu::device_kind::cuda)
    return make_error(errc::invalid_argument,
                      "--gpus {} needs GPUs (--device {} serves on the host)", a.gpus, a.device);
  if (!a.gpu_topology.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(a.gpu_topology));
    layout.partition = topo.peer_links();
  }
  return layout;
}

// The model a calibration at start times: --model, else the repository's
// first, else a default one over the dataset.
expected<nn::model> calibration_model(const gnn_stack_args& a, const graph::dataset& ds,
                                      nn::heap_allocator& weights, type_tables* tables) {
  std::string model_dir = a.model;
  if (model_dir.empty() && !a.repository.empty()) {  // calibrate on one of the repository's
    SPINDLE_ASSIGN_OR_RETURN(auto all, scan_repository(a.repository));
    if (!all.empty()) model_dir = all.begin()->second.versions.rbegin()->second;
  }
  type_table_set type_rows;  // a large typed table is not loaded to calibrate either
  if (tables && !model_dir.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(type_rows, tables->readers(model_dir));
  }
  auto m = model_dir.empty()
               ? serving::default_calibration_model(ds, weights)
               : nn::model::load(model_dir, weights, false, {}, std::move(type_rows.readers));
  if (!m) return std::move(m).error();
  if (!a.fanouts.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto f, config::parse_fanouts(a.fanouts));
    SPINDLE_TRY(m->set_fanouts(std::move(f)));
  }
  if (!a.precision.empty()) SPINDLE_TRY(m->set_precision(a.precision));
  return m;
}

expected<serving::psgs_calibration> load_or_calibrate(const gnn_stack_args& a,
                                                      const graph::dataset& ds, thread_pool& pool,
                                                      serving::device_executors& executors,
                                                      type_tables* tables) {
  if (!a.calibration.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(a.calibration, "calibration"));
    SPINDLE_ASSIGN_OR_RETURN(auto c, serving::psgs_calibration::from_json(text, a.calibration));
    log::info("PSGS routing from {}: {}", a.calibration, c.summary());
    return c;
  }
  // Calibrate on the served model: the curves time the whole served pipeline.
  serving::calibrate_options o;
  o.batches = 100;
  // The large executor calibrated is the one that will serve (a GPU's with
  // --device, over the same device-resident graph and tiers the server uses).
  SPINDLE_ASSIGN_OR_RETURN(o.device, executors.make());
  nn::heap_allocator weights;
  SPINDLE_ASSIGN_OR_RETURN(auto m, calibration_model(a, ds, weights, tables));
  log::info(
      "no --calibration: calibrating PSGS routing now ({} batches per executor; "
      "`spindle calibrate` saves one with its table and plot)",
      o.batches);
  auto calibration = serving::calibrate(ds, m, o, pool);
  executors.forget(m);  // the calibration model's device weights go with it
  if (calibration) log::info("PSGS routing calibrated: {}", calibration->summary());
  return calibration;
}

// The GNNs the server loads at start: --model and every version of --model-repository.
expected<std::vector<std::string>> start_models(const gnn_stack_args& a) {
  std::vector<std::string> dirs;
  if (!a.model.empty()) dirs.push_back(a.model);
  if (a.repository.empty()) return dirs;
  SPINDLE_ASSIGN_OR_RETURN(const auto all, scan_repository(a.repository));
  for (const auto& [name, m] : all)
    for (const auto& [version, dir] : m.versions) dirs.push_back(dir);
  return dirs;
}

// A whole prepared dataset with features and PSGS, as one process serves it.
expected<graph::dataset> open_served_dataset(const gnn_stack_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::open_for_serving(a.dataset, a.no_verify_data));
  if (ds.partitioned())
    return make_error(errc::invalid_argument,
                      "{}: is one rank's partition of a cluster dataset (spindle partition); serve "
                      "it with `spindle node`/`launch --dataset` on the partition's folder, or "
                      "serve the whole dataset here",
                      a.dataset);
  if (ds.features().empty() || !ds.has_metrics())
    return make_error(errc::invalid_argument,
                      "{}: serving needs features and PSGS (spindle prepare)", a.dataset);
  return ds;
}

// The device, its executors and the PSGS routing every model is served with.
status place_and_route(gnn_serving_defaults& d, const gnn_stack_args& a, const graph::dataset& ds,
                       thread_pool& pool) {
  SPINDLE_ASSIGN_OR_RETURN(d.device, gpu::resolve_device(a.device));
  SPINDLE_ASSIGN_OR_RETURN(const auto layout, gpu_layout_of(a, d.device));
  if (!a.gnnsched.empty() && layout.gpus > 1)
    return make_error(errc::invalid_argument,
                      "--gnnsched with --gpus {}: GNNSched's pool is one GPU's memory; serve with "
                      "--gpus 1",
                      layout.gpus);
  // The GPUs' graph, tiers and weights: uploaded once, for calibration and serving.
  SPINDLE_ASSIGN_OR_RETURN(d.executors, serving::device_executors::create(
                                            ds, d.device, a.device_feature_mb << 20, layout));
  if (!a.type_tables.pdb.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(d.type_pdb, type_tables::open(a.type_tables));
  }
  SPINDLE_ASSIGN_OR_RETURN(d.calibration,
                           load_or_calibrate(a, ds, pool, d.executors, d.type_pdb.get()));
  d.calibrate_loads_batches = a.calibrate_loads;
  return status::ok();
}

// What every model loaded is served with, the flags' overrides included.
expected<gnn_serving_defaults> serving_defaults(const gnn_stack_args& a, const graph::dataset& ds,
                                                thread_pool& pool, serving::routing_policy policy,
                                                const front_door_args& door) {
  gnn_serving_defaults d;
  SPINDLE_TRY(place_and_route(d, a, ds, pool));
  d.policy = policy;
  d.batch.deadline = std::chrono::microseconds(a.deadline_us);
  d.batch.max_batch = std::size_t(std::max(1, a.max_batch));
  d.batch.split_min = std::size_t(std::max(0, a.split_min));
  d.pipelines = a.pipelines;
  d.express_max_requests = std::size_t(a.express_max_requests);
  if (!a.fanouts.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(d.fanouts, config::parse_fanouts(a.fanouts));
  }
  d.sampling = a.sampling;
  d.precision = a.precision;
  d.admission = door.admission();
  d.max_batch_from_flag = a.max_batch_flag;
  d.deadline_from_flag = a.deadline_flag;
  d.slo_from_flag = a.slo_flag;
  d.repository = a.repository;
  return d;
}

// --model and every model of --model-repository, loaded.
expected<std::vector<actors::gnn_model_binding>> load_models(gnn_models& models,
                                                             const gnn_stack_args& a) {
  std::vector<actors::gnn_model_binding> bindings;
  if (!a.model.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto b, models.load(a.name, a.model));
    bindings.push_back(std::move(b));
  }
  if (!a.repository.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto from_repository, models.load_repository());
    for (auto& b : from_repository) {
      log::info("model repository: serving '{}' version {}", b.name, b.version);
      bindings.push_back(std::move(b));
    }
  }
  if (bindings.empty())
    return make_error(errc::not_found,
                      "--model-repository {}: holds no model (NAME/VERSION/model.toml)",
                      a.repository);
  return bindings;
}

// The workload through the first model's batcher; `report` sees what it measured.
status drive_workload(caf::actor_system& sys, const actors::gnn_model_binding& b,
                      const graph::dataset& ds, const gnn_workload& w,
                      const workload_report& report) {
  auto result = std::make_shared<actors::load_result>();
  caf::scoped_actor self{sys};
  auto requests = serving::degree_requests(ds, w.requests, w.reproducible);
  if (b.model) serving::shape_workload(ds, b.model->desc(), requests);
  actors::spawn_load_client(sys, b.batcher, {std::move(requests), w.rate, w.clients}, result, self);
  self->receive([](actors::done_atom) {});
  actors::batcher_stats stats;
  self->request(b.batcher, caf::infinite, actors::stats_atom::value)
      .receive([&](const actors::batcher_stats& s) { stats = s; }, [](caf::error&) {});
  report(*result, stats, b.device);
  return status::ok();
}

// Starts the models over `ds` and serves them (doors or workload).
status serve_models(caf::actor_system& sys, graph::dataset& ds, gnn_serving_defaults defaults,
                    graph_update_service& graph_service, const gnn_stack_args& a,
                    const front_door_args& door, const gnn_workload& w, thread_pool& pool,
                    const std::string& token, const workload_report& report) {
  if (!a.gnnsched.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(defaults.gnnsched, colocation::parse_grouping_policy(a.gnnsched));
    defaults.gnnsched_bytes = std::size_t(a.gnnsched_mb) << 20;
  }
  SPINDLE_ASSIGN_OR_RETURN(auto models, gnn_models::create(sys, ds, pool, std::move(defaults)));
  SPINDLE_ASSIGN_OR_RETURN(auto bindings, load_models(*models, a));
  models->started();  // models loaded from now on are timed as they load
  if (w.requests > 0) return drive_workload(sys, bindings.front(), ds, w, report);
  door_stack s;
  s.gnns = bindings;
  s.live = ds.live();
  if (auto* f = graph_service.stream.get()) s.graph_stream = [f] { return f->stats(); };
  s.loader = models->loader();
  // No batch (and no parked call it wakes) outlives the gateway.
  s.on_stop = [&graph_service] { graph_service.stream.reset(); };
  return serve_door_stack(sys, door, std::move(s), token);
}

}  // namespace

status serve_gnn_stack(const gnn_stack_args& a, const front_door_args& door, const gnn_workload& w,
                       thread_pool& pool, const workload_report& report) {
  const bool listening = w.requests == 0;
  if (listening) {
    SPINDLE_TRY(check_exposure(door));  // before loading anything
    // The SplitRPC data path's UCX worker listens only where the front door does.
    SPINDLE_TRY(transport::ucx::restrict_to_host(door.listen.substr(0, door.listen.rfind(':'))));
  }
  if (listening) block_stop_signals();  // before any thread starts
  if (!a.type_tables.given.empty()) {  // before anything is opened or loaded
    SPINDLE_ASSIGN_OR_RETURN(const auto dirs, start_models(a));
    SPINDLE_TRY(check_type_table_flags(a.type_tables, dirs));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto ds, open_served_dataset(a));
  SPINDLE_ASSIGN_OR_RETURN(auto policy, serving::parse_routing_policy(a.policy));
  std::string token;
  if (listening) {
    SPINDLE_ASSIGN_OR_RETURN(token, admin_token(door.admin_token_file));
  }
  nn::set_blas_threads(1);
  SPINDLE_ASSIGN_OR_RETURN(auto defaults, serving_defaults(a, ds, pool, policy, door));
  if (a.graph.on && defaults.device == gpu::device_kind::cuda)
    return make_error(errc::invalid_argument,
                      "--graph-updates with --device {}: the GPU holds the base graph and would "
                      "answer on it; serve updates with --device host",
                      a.device);
  SPINDLE_ASSIGN_OR_RETURN(
      auto graph_service,
      start_graph_updates(ds, a.graph, listening && door.admin_token_file.empty()));
  log::info("serving on the {} device (--device {})", gpu::to_string(defaults.device), a.device);
  caf::actor_system_config cfg;
  actors::configure_scheduler(cfg);
  caf::actor_system sys{cfg};
  return serve_models(sys, ds, std::move(defaults), graph_service, a, door, w, pool, token, report);
}

status serve_recommendations(const front_door_args& door) {
  SPINDLE_TRY(check_exposure(door));
  block_stop_signals();
  SPINDLE_ASSIGN_OR_RETURN(auto token, admin_token(door.admin_token_file));
  nn::set_blas_threads(1);
  caf::actor_system_config cfg;
  actors::configure_scheduler(cfg);
  caf::actor_system sys{cfg};
  return serve_door_stack(sys, door, {}, token);
}

}  // namespace spindle::runtime
