// `spindle serve`: the embedded default, one process with every role. Loads a
// dataset and a model, routes batches by PSGS (calibration file, or a quick
// calibration at start), and runs the actor pipeline (batcher -> pipelines).
// Until the RPC front door exists, `--workload N` drives N requests from an
// in-process generator and prints throughput and latency per stage.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "actors/batcher_actor.hpp"
#include "actors/load_client.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/router_actor.hpp"
#include "actors/scheduler_config.hpp"
#include "apps/commands/command.hpp"
#include "apps/commands/runtime_flags.hpp"
#include "config/topology.hpp"
#include "core/log.hpp"
#include "core/progress.hpp"
#include "core/text_file.hpp"
#include "graph/metrics.hpp"
#include "runtime/gnn_models.hpp"
#include "runtime/graph_updates.hpp"
#include "runtime/launched_ranks.hpp"
#include "runtime/model_repository.hpp"
#include "runtime/door_stack.hpp"
#include "runtime/serve_rpc.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/psgs_calibrate.hpp"
#include "transport/ucx/net_devices.hpp"

namespace spindle::apps {

using namespace runtime;  // the node runtime these commands start
namespace {

struct serve_args {
  std::string dataset, model, calibration, policy = "strict";
  int deadline_us = 2000, max_batch = 64, pipelines = 2, clients = 8;
  std::size_t workload = 0;
  double rate = 0;
  bool json = false;
  bool reproducible = false;  // --workload requests carry sampler seeds
  std::string name;           // model name for RPC calls (default: model.toml's)
  std::string gnnsched;       // GNNSched grouping policy for the forward passes, or empty
  std::size_t gnnsched_mb = 256;
  std::string fanouts;          // overrides model.toml's (and the dataset's) fanouts
  std::string sampling;         // overrides model.toml's sampling mode
  std::string repository;       // --model-repository DIR
  std::string device = "auto";  // --device auto|host|cuda
  std::size_t device_feature_mb = 1024;
  int gpus = 1;              // --gpus: GPUs the pipelines are dealt over
  std::string gpu_topology;  // --topology: its intra link partitions or replicates
  bool max_batch_flag = false, deadline_flag = false, slo_flag = false;  // given explicitly
  bool no_verify_data = false;  // skip the dataset's checksums at start
  runtime::graph_update_args graph;  // --graph-updates, --graph-log*, --graph-stream*
  front_door_args door;
};

// --gpus and --topology: how many GPUs, and whether their links (the topology's
// intra link, as Quiver's placement reads it) partition the device tier.
expected<serving::gpu_layout> gpu_layout_of(const serve_args& a, gpu::device_kind device) {
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

expected<serving::psgs_calibration> load_or_calibrate(const serve_args& a, const graph::dataset& ds,
                                                    thread_pool& pool,
                                                    serving::device_executors& executors) {
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
  std::string model_dir = a.model;
  if (model_dir.empty() && !a.repository.empty()) {  // calibrate on one of the repository's
    SPINDLE_ASSIGN_OR_RETURN(auto all, scan_repository(a.repository));
    if (!all.empty()) model_dir = all.begin()->second.versions.rbegin()->second;
  }
  auto m = model_dir.empty() ? serving::default_calibration_model(ds, weights)
                             : nn::model::load(model_dir, weights);
  if (!m) return std::move(m).error();
  if (!a.fanouts.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto f, config::parse_fanouts(a.fanouts));
    SPINDLE_TRY(m->set_fanouts(std::move(f)));
  }
  log::info("no --calibration: calibrating PSGS routing now ({} batches per executor; "
            "`spindle calibrate` saves one with its table and plot)",
            o.batches);
  auto calibration = serving::calibrate(ds, *m, o, pool);
  executors.forget(*m);  // the calibration model's device weights go with it
  if (calibration) log::info("PSGS routing calibrated: {}", calibration->summary());
  return calibration;
}

void report_load(const actors::load_result& r, const actors::batcher_stats& st,
                 const colocation::device_scheduler* device, const serve_args& a) {
  const double n = double(r.latency_s.size());
  const double tput = n / r.wall_s;
  if (a.json) {
    nlohmann::json j = {{"requests", a.workload},
                        {"answered", r.latency_s.size()},
                        {"errors", r.errors},
                        {"throughput_rps", tput},
                        {"latency_ms",
                         {{"p50", pct(r.latency_s, 0.5) * 1e3},
                          {"p99", pct(r.latency_s, 0.99) * 1e3},
                          {"p999", pct(r.latency_s, 0.999) * 1e3}}},
                        {"stage_mean_ms",
                         {{"batching", r.queued_s / n * 1e3},
                          {"sampling", r.sample_s / n * 1e3},
                          {"gathering", r.gather_s / n * 1e3},
                          {"compute", r.compute_s / n * 1e3}}},
                        {"batches", st.batches},
                        {"small_executor_batches", st.small},
                        {"large_executor_batches", st.large}};
    if (device) {
      const auto c = device->stats();
      j["gnnsched"] = {{"tasks", c.tasks},
                       {"groups", c.groups},
                       {"largest_group", c.largest_group},
                       {"grouped_tasks", c.grouped_tasks},
                       {"overruns", c.overruns}};
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("served {} of {} requests in {:.2f} s: {:.0f} req/s ({} errors{})\n",
             r.latency_s.size(), a.workload, r.wall_s, tput, r.errors,
             r.errors ? ", first: " + r.first_error : "");
  fmt::print("latency p50 {:.2f} ms, p99 {:.2f} ms, p999 {:.2f} ms\n", pct(r.latency_s, 0.5) * 1e3,
             pct(r.latency_s, 0.99) * 1e3, pct(r.latency_s, 0.999) * 1e3);
  fmt::print(
      "per request, mean: batching {:.3f} ms, sampling {:.3f} ms, gathering {:.3f} ms, compute "
      "{:.3f} ms\n",
      r.queued_s / n * 1e3, r.sample_s / n * 1e3, r.gather_s / n * 1e3, r.compute_s / n * 1e3);
  fmt::print("batches {} (mean {:.1f} requests); inline {} / pooled {}\n", st.batches,
             st.batches ? double(st.requests) / double(st.batches) : 0.0, st.small, st.large);
  if (device) {
    const auto c = device->stats();
    fmt::print("gnnsched: {} tasks in {} groups, largest {}, {} tasks co-located, {} overruns\n",
               c.tasks, c.groups, c.largest_group, c.grouped_tasks, c.overruns);
  }
}

// Recommendation models only (--rec-model, --dlrm-model): no dataset, no GNN.
status serve_rec_only(const serve_args& a) {
  SPINDLE_TRY(follow_launch());  // a plan server of `spindle launch` ends with it
  if (a.workload > 0)
    return make_error(errc::invalid_argument, "--workload drives a GNN: give --model DIR");
  SPINDLE_TRY(check_exposure(a.door));
  block_stop_signals();
  SPINDLE_ASSIGN_OR_RETURN(auto token, admin_token(a.door.admin_token_file));
  nn::set_blas_threads(1);
  caf::actor_system_config cfg;
  actors::configure_scheduler(cfg);
  caf::actor_system sys{cfg};
  return serve_door_stack(sys, a.door, {}, token);
}

status run_serve(const serve_args& a, global_options& g) {
  const bool rec_only = !a.door.rec_models.empty() || !a.door.dlrm.model.empty();
  if (a.model.empty() && a.repository.empty() && rec_only && a.dataset.empty())
    return serve_rec_only(a);
  if (a.model.empty() && a.repository.empty())
    return make_error(errc::invalid_argument,
                      "give --model DIR or --model-repository DIR (with --dataset), or "
                      "--rec-model NAME=DIR");
  if (a.dataset.empty())
    return make_error(errc::invalid_argument, "--dataset DIR: a GNN model needs its graph");
  const bool listening = a.workload == 0;
  if (listening) {
    SPINDLE_TRY(check_exposure(a.door));  // before loading anything
    // The SplitRPC data path's UCX worker listens only where the front door does.
    SPINDLE_TRY(
        transport::ucx::restrict_to_host(a.door.listen.substr(0, a.door.listen.rfind(':'))));
  }
  if (listening) block_stop_signals();  // before any thread starts
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
  SPINDLE_ASSIGN_OR_RETURN(auto policy, serving::parse_routing_policy(a.policy));
  std::string token;
  if (listening) {
    SPINDLE_ASSIGN_OR_RETURN(token, admin_token(a.door.admin_token_file));
  }
  nn::set_blas_threads(1);
  gnn_serving_defaults defaults;
  SPINDLE_ASSIGN_OR_RETURN(defaults.device, gpu::resolve_device(a.device));
  SPINDLE_ASSIGN_OR_RETURN(const auto layout, gpu_layout_of(a, defaults.device));
  if (!a.gnnsched.empty() && layout.gpus > 1)
    return make_error(errc::invalid_argument,
                      "--gnnsched with --gpus {}: GNNSched's pool is one GPU's memory; serve with "
                      "--gpus 1",
                      layout.gpus);
  // The GPUs' graph, tiers and weights: uploaded once, for calibration and serving.
  SPINDLE_ASSIGN_OR_RETURN(
      defaults.executors,
      serving::device_executors::create(ds, defaults.device, a.device_feature_mb << 20, layout));
  SPINDLE_ASSIGN_OR_RETURN(defaults.calibration,
                           load_or_calibrate(a, ds, g.pool(), defaults.executors));
  defaults.policy = policy;
  defaults.batch.deadline = std::chrono::microseconds(a.deadline_us);
  defaults.batch.max_batch = std::size_t(std::max(1, a.max_batch));
  defaults.pipelines = a.pipelines;
  if (!a.fanouts.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(defaults.fanouts, config::parse_fanouts(a.fanouts));
  }
  defaults.sampling = a.sampling;
  defaults.admission = a.door.admission();
  defaults.max_batch_from_flag = a.max_batch_flag;
  defaults.deadline_from_flag = a.deadline_flag;
  defaults.slo_from_flag = a.slo_flag;
  defaults.repository = a.repository;
  if (a.graph.on && defaults.device == gpu::device_kind::cuda)
    return make_error(errc::invalid_argument,
                      "--graph-updates with --device {}: the GPU holds the base graph and would "
                      "answer on it; serve updates with --device host",
                      a.device);
  SPINDLE_ASSIGN_OR_RETURN(
      auto graph_service,
      runtime::start_graph_updates(ds, a.graph, listening && a.door.admin_token_file.empty()));
  log::info("serving on the {} device (--device {})", gpu::to_string(defaults.device), a.device);
  caf::actor_system_config cfg;
  actors::configure_scheduler(cfg);
  caf::actor_system sys{cfg};
  if (!a.gnnsched.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(defaults.gnnsched, colocation::parse_grouping_policy(a.gnnsched));
    defaults.gnnsched_bytes = std::size_t(a.gnnsched_mb) << 20;
  }
  SPINDLE_ASSIGN_OR_RETURN(auto models_ptr,
                           gnn_models::create(sys, ds, g.pool(), std::move(defaults)));
  auto& models = *models_ptr;
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
  const auto& b = bindings.front();
  if (listening) {
    door_stack s;
    s.gnns = bindings;
    s.live = ds.live();
    if (auto* f = graph_service.stream.get()) s.graph_stream = [f] { return f->stats(); };
    s.loader = models.loader();
    // No batch (and no parked call it wakes) outlives the gateway.
    s.on_stop = [&graph_service] { graph_service.stream.reset(); };
    return serve_door_stack(sys, a.door, std::move(s), token);
  }
  auto result = std::make_shared<actors::load_result>();
  caf::scoped_actor self{sys};
  actors::spawn_load_client(
      sys, b.batcher, {serving::degree_requests(ds, a.workload, a.reproducible), a.rate, a.clients},
      result, self);
  self->receive([](actors::done_atom) {});
  actors::batcher_stats stats;
  self->request(b.batcher, caf::infinite, actors::stats_atom::value)
      .receive([&](const actors::batcher_stats& s) { stats = s; }, [](caf::error&) {});
  report_load(*result, stats, b.device, a);
  return status::ok();  // `models` stops the actors
}

}  // namespace

void register_serve(CLI::App& app, global_options& g) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve GNNs and recommendation models in one process behind the "
      "Cap'n Proto front door (and KServe over HTTP/gRPC); --workload drives requests "
      "from an in-process generator instead");
  auto a = std::make_shared<serve_args>();
  cmd->add_option("--dataset", a->dataset,
                  "Prepared dataset directory (needed by GNN models; a server of only "
                  "recommendation models has none)");
  cmd->add_option("--model", a->model, "Model directory (model.toml + weights)");
  cmd->add_option("--model-repository", a->repository,
                  "Serve every model of DIR/NAME/VERSION/ (Triton's layout: model.toml + "
                  "weights), each at the version its model.toml's version_policy picks "
                  "(latest by default); loading a served NAME again rolls it to its new version");
  cmd->add_option("--calibration", a->calibration,
                  "PSGS calibration from `spindle calibrate` (default: a quick one now)");
  cmd->add_option("--policy", a->policy,
                  "Routing: strict (PSGS-Strict) | loose (PSGS-Loose) | fixed")
      ->check(CLI::IsMember({"strict", "loose", "fixed"}))
      ->capture_default_str();
  // The same bounds as the live tunables (batch_deadline_us, max_batch).
  cmd->add_option("--deadline-us", a->deadline_us, "Batch deadline, microseconds")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--max-batch", a->max_batch, "Maximum requests per batch")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--fanouts", a->fanouts,
                  "Neighbours sampled per hop, one per model layer (e.g. 25,10); default: "
                  "model.toml's fanouts, else the dataset's when it has one per layer");
  cmd->add_option("--sampling", a->sampling,
                  "What an answer depends on: shared (calls without a sampler seed share their "
                  "batch's sampled graph) or per_request (each call sampled on its own, seeded "
                  "by its seeds: the same call, the same answer); default: model.toml's, else "
                  "shared")
      ->check(CLI::IsMember({"shared", "per_request"}));
  cmd->add_option("--pipelines", a->pipelines, "Pipelines sharing the batcher")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--workload", a->workload,
                  "Drive N requests from the in-process generator, print the report and exit "
                  "(without it: serve the RPC front door until SIGINT/SIGTERM)");
  cmd->add_option("--name", a->name, "Model name for RPC calls (default: the model.toml name)");
  add_device_options(*cmd, a->device, a->device_feature_mb);
  cmd->add_option("--gpus", a->gpus,
                  "With --device cuda: GPUs the pipelines are dealt over, each with its own "
                  "feature tier of --device-feature-mb")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--topology", a->gpu_topology,
                  "Topology TOML whose intra link decides how several GPUs share the device "
                  "tier: nvlink partitions it (rows fetched from the GPU holding them, over "
                  "NCCL), pcie replicates it (the default without a file)");
  cmd->add_option("--gnnsched", a->gnnsched,
                  "Run every model's forward passes through GNNSched's device scheduler with "
                  "this grouping policy: fifo | sqtf | bqt (live: tunable gnnsched_policy)");
  cmd->add_option("--gnnsched-memory-mb", a->gnnsched_mb,
                  "With --gnnsched: the device memory pool the groups share")
      ->capture_default_str();
  add_front_door_options(*cmd, a->door);
  cmd->add_option("--rate", a->rate, "Open-loop requests per second (0: closed loop)")
      ->capture_default_str();
  cmd->add_option("--clients", a->clients, "Outstanding requests in closed loop")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object");
  add_graph_update_options(*cmd, a->graph);
  cmd->add_flag("--no-verify-data", a->no_verify_data,
                "Skip the dataset's checksums at start (for a dataset too large to hash; "
                "logged): a damaged or altered file is then served as it is");
  cmd->add_flag("--reproducible", a->reproducible,
                "--workload requests carry sampler seeds (each sampled on its own, fixed "
                "answers); by default they share their batch's sampled graph, as real clients' do");
  cmd->callback([a, &g, cmd] {
    a->max_batch_flag = cmd->count("--max-batch") > 0;
    a->deadline_flag = cmd->count("--deadline-us") > 0;
    a->slo_flag = cmd->count("--slo-ms") > 0;
    a->door.slo_from_flag = a->slo_flag;
    if (a->json) set_progress_enabled(false);
    if (int rc = report(run_serve(*a, g))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace spindle::apps
