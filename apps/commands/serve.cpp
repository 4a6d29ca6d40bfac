// `spindle serve`: the embedded default, one process with every role (the
// stack is runtime/gnn_stack.hpp): its flags, and the report of `--workload N`,
// which drives N requests from an in-process generator and prints throughput
// and latency per stage.
#include <nlohmann/json.hpp>

#include "apps/commands/command.hpp"
#include "apps/commands/runtime_flags.hpp"
#include "core/progress.hpp"
#include "runtime/gnn_stack.hpp"
#include "runtime/launched_ranks.hpp"

namespace spindle::apps {

using namespace runtime;  // the node runtime these commands start
namespace {

struct serve_args : gnn_stack_args {
  std::size_t workload = 0;
  double rate = 0;
  int clients = 8;
  bool json = false;
  bool reproducible = false;  // --workload requests carry sampler seeds
  front_door_args door;
};

void report_load(const actors::load_result& r, const actors::batcher_stats& st,
                 const colocation::device_scheduler* device, const serve_args& a) {
  const double n = double(r.latency_s.size());
  const double tput = n / r.wall_s;
  if (a.json) {
    nlohmann::json j = {{"requests", a.workload},
                        {"answered", r.latency_s.size()},
                        {"errors", r.errors},
                        {"first_error", r.first_error},
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
  SPINDLE_TRY(check_type_table_flags(a.type_tables, {}));
  return serve_recommendations(a.door);
}

status run_serve(const serve_args& a, global_options& g) {
  SPINDLE_TRY(check_door_flags(a.door));
  const bool rec_only = !a.door.rec_models.empty() || !a.door.dlrm.model.empty();
  if (a.model.empty() && a.repository.empty() && rec_only && a.dataset.empty())
    return serve_rec_only(a);
  if (a.model.empty() && a.repository.empty())
    return make_error(errc::invalid_argument,
                      "give --model DIR or --model-repository DIR (with --dataset), or "
                      "--rec-model NAME=DIR");
  if (a.dataset.empty())
    return make_error(errc::invalid_argument, "--dataset DIR: a GNN model needs its graph");
  // A workload whose every request failed served nothing: the run fails (with
  // the first error), so a script or test cannot mistake it for a measurement.
  status all_failed = status::ok();
  SPINDLE_TRY(serve_gnn_stack(
      a, a.door, {a.workload, a.rate, a.clients, a.reproducible}, g.pool(),
      [&a, &all_failed](const actors::load_result& r, const actors::batcher_stats& st,
                        const colocation::device_scheduler* device) {
        report_load(r, st, device, a);
        if (r.latency_s.empty() && r.errors > 0)
          all_failed = make_error(errc::unavailable, "--workload: all {} requests failed; the first: {}",
                                  r.errors, r.first_error);
      }));
  return all_failed;
}

}  // namespace

void register_serve(CLI::App& app, global_options& g) {
  auto [cmd, a] = add_command<serve_args>(
      app, "serve",
      "Serve GNNs and recommendation models in one process behind the "
      "Cap'n Proto front door (and KServe over HTTP/gRPC); --workload drives requests "
      "from an in-process generator instead");
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
  add_bounded(*cmd, "--calibrate-loads", a->calibrate_loads,
              "Time PSGS routing of every GNN loaded at run time (Admin load) on itself as it "
              "loads, N batches per executor (the start's quick one: 100); the load waits for "
              "it and shares the pool with serving (0, the default: a loaded GNN routes by the "
              "start's calibration or --calibration)",
              0, 100000);
  cmd->add_option("--policy", a->policy,
                  "Routing: strict (PSGS-Strict) | loose (PSGS-Loose) | fixed")
      ->check(CLI::IsMember({"strict", "loose", "fixed"}))
      ->capture_default_str();
  // The same bounds as the live tunables (batch_deadline_us, max_batch).
  add_bounded(*cmd, "--deadline-us", a->deadline_us, "Batch deadline, microseconds", 0, 10'000'000);
  add_bounded(*cmd, "--max-batch", a->max_batch, "Maximum requests per batch", 1, 65536);
  add_bounded(*cmd, "--split-min", a->split_min,
              "A batch that closes while two or more pipelines are idle is dealt out to them, "
              "parts of at least this many calls (0: never split; live: tunable split_min)",
              0, 65536);
  cmd->add_option("--fanouts", a->fanouts,
                  "Neighbours sampled per hop, one per model layer (e.g. 25,10); default: "
                  "model.toml's fanouts, else the dataset's when it has one per layer");
  cmd->add_option("--sampling", a->sampling,
                  "What an answer depends on: shared (calls without a sampler seed share their "
                  "batch's sampled graph) or per_request (each call sampled on its own, seeded "
                  "by its seeds: the same call, the same answer); default: model.toml's, else "
                  "shared")
      ->check(CLI::IsMember({"shared", "per_request"}));
  cmd->add_option("--precision", a->precision,
                  "The layers' arithmetic of every GNN served (a stack, as export_pyg writes): "
                  "fp32, bf16 (projections in bfloat16 on AMX / AVX-512 BF16, sums in "
                  "float32) or int8 (int8 products on VNNI, sums in int32); on the host even "
                  "with --device cuda; overrides model.toml's")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  add_bounded(*cmd, "--pipelines", a->pipelines, "Pipelines sharing the batcher", 1, 256);
  add_bounded(*cmd, "--express-max-requests", a->express_max_requests,
              "Run to completion: up to N calls a door read together that find their model "
              "idle run on the door's thread, not through the batcher and a pipeline thread "
              "(0: never; not with --gnnsched)",
              0, 64);
  cmd->add_option("--workload", a->workload,
                  "Drive N requests from the in-process generator, print the report and exit "
                  "(without it: serve the RPC front door until SIGINT/SIGTERM)");
  cmd->add_option("--name", a->name, "Model name for RPC calls (default: the model.toml name)");
  add_device_options(*cmd, a->device, a->device_feature_mb);
  add_bounded(*cmd, "--gpus", a->gpus,
              "With --device cuda: GPUs the pipelines are dealt over, each with its own "
              "feature tier of --device-feature-mb",
              1, 64);
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
  add_type_table_options(*cmd, a->type_tables);
  cmd->add_flag("--no-verify-data", a->no_verify_data,
                "Skip the dataset's checksums at start (for a dataset too large to hash; "
                "logged): a damaged or altered file is then served as it is");
  cmd->add_flag("--reproducible", a->reproducible,
                "--workload requests carry sampler seeds (each sampled on its own, fixed "
                "answers); by default they share their batch's sampled graph, as real clients' do");
  on_run(cmd, [a, &g, cmd] {
    a->max_batch_flag = cmd->count("--max-batch") > 0;
    a->deadline_flag = cmd->count("--deadline-us") > 0;
    a->slo_flag = cmd->count("--slo-ms") > 0;
    a->door.slo_from_flag = a->slo_flag;
    if (a->json) set_progress_enabled(false);
    a->type_tables.given = type_table_flags_given(*cmd);
    return run_serve(*a, g);
  });
}

}  // namespace spindle::apps
