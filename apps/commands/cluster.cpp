// `spindle node`, `spindle launch` and `spindle cluster-status`: one process per
// node of a cluster described by a topology TOML (servers = ranks, rank 0 = the
// coordinator), membership over CAF's middleman on each server's host:port.
// What a node runs is runtime/cluster_node.hpp; this file holds `node`'s flags.
#include <fmt/ranges.h>

#include "apps/commands/command.hpp"
#include "apps/commands/node_flags.hpp"
#include "apps/commands/runtime_flags.hpp"
#include "runtime/cluster_node.hpp"

namespace spindle::apps {

using namespace runtime;  // the node runtime these commands start
namespace {

// --calibrate times this cluster at start; --calibration FILE reads one made
// before: not both. The routing policy (--policy) applies to either.
status check_calibration_flags(node_args& a) {
  if (a.serving.calibrate && !a.serving.calibration.empty())
    return make_error(errc::invalid_argument,
                      "--calibrate and --calibration {}: give one (--calibrate times this "
                      "cluster at start)",
                      a.serving.calibration);
  const bool routes = a.serving.calibrate || !a.serving.calibration.empty();
  if (routes && (a.dataset.empty() || a.model.empty()))
    return make_error(
        errc::invalid_argument, "{} routes this node's GNN batches: it needs --dataset and --model",
        a.serving.calibrate ? "--calibrate" : "--calibration " + a.serving.calibration);
  if (!a.serving.calibration_out.empty() && !a.serving.calibrate)
    return make_error(errc::invalid_argument, "--calibration-out {} needs --calibrate",
                      a.serving.calibration_out);
  SPINDLE_ASSIGN_OR_RETURN(a.serving.routing, serving::parse_routing_policy(a.policy));
  return status::ok();
}

// The flags only this node's door honours: without --listen no door opens, so
// each one given is refused by name rather than ignored.
constexpr const char* kDoorFlags[] = {
    "--admin-token-file", "--metrics", "--access-log", "--http", "--grpc", "--max-connections",
    "--max-connections-per-peer", "--max-queue", "--slo-ms", "--forward", "--rec-model",
    "--rec-workers", "--dlrm-model", "--pdb", "--hps-config", "--vdb", "--vdb-redis",
    "--vdb-partitions", "--cache-fraction", "--hit-rate-threshold", "--refresh-ms", "--warm-up",
    "--updates", "--updates-group", "--consumer",
    "--node-manager", "--profiles", "--manager-max-workers", "--dlrm-name", "--dlrm-instances",
    "--model-repository", "--tensor-models"};

status refuse_door_flags_without_listen(CLI::App& node, const node_args& a) {
  if (a.listen) return status::ok();
  std::vector<std::string> given;
  for (const char* flag : kDoorFlags)
    if (node.count(flag) > 0) given.emplace_back(flag);
  if (given.empty()) return status::ok();
  const bool one = given.size() == 1;
  return make_error(errc::invalid_argument,
                    "{} {} this node's door, and without --listen HOST:PORT no door opens: give "
                    "--listen, or leave {} out",
                    fmt::join(given, ", "), one ? "configures" : "configure", one ? "it" : "them");
}

}  // namespace

void register_cluster(CLI::App& app, global_options&) {
  auto path = std::make_shared<std::string>();
  auto na = std::make_shared<node_args>();
  auto* node = app.add_subcommand(
      "node",
      "Run one node of a cluster (rank N of the config's servers; 0 = coordinator) "
      "until SIGINT/SIGTERM");
  node->add_option("--config", na->config, "Cluster TOML (a topology file with ports)")->required();
  node->add_option("--rank", na->rank,
                   "This node's rank (default: its launcher's: SPINDLE_RANK, mpirun's "
                   "OMPI_COMM_WORLD_RANK or PMIX_RANK, srun's SLURM_PROCID, a StatefulSet pod's "
                   "ordinal)")
      ->check(CLI::NonNegativeNumber);
  node->add_option("--join", na->join,
                   "Join the running cluster whose rank 0 listens at HOST:PORT, as a rank past "
                   "the TOML's (with the cluster token); the placement re-plans with it, its rows "
                   "move to it from their owners, and its door opens once it serves them. "
                   "--dataset: the whole dataset, or the `spindle partition` folder (it reads "
                   "rank 0's for the graph and FAP; --fetch-from fetches rank 0's)");
  node->add_option("--address", na->address,
                   "With --join: this rank's own HOST:PORT (its token gate; port 0: a free one)")
      ->capture_default_str();
  node->add_option("--token-file", na->token_file,
                   "The cluster token (a Kubernetes Secret's file; or SPINDLE_CLUSTER_TOKEN; "
                   "default: the TOML's token_file)");
  node->add_option("--dataset", na->dataset,
                   "Dataset: members hold their shard of the FAP plan in UCX memory");
  node->add_flag("--no-verify-data", na->no_verify_data,
                 "Skip the rank's data checksums at start (logged): a damaged or altered file "
                 "is then served as it is");
  node->add_option("--fetch-from", na->files.fetch_from,
                   "File doors (HOST:PORT, comma-separated; see --files) to fetch this rank's "
                   "share of --dataset (DIR/rank-N, or a whole dataset), the --model, "
                   "--dlrm-model and --rec-model folders and the --model-repository's versions "
                   "(also those loaded later) from when they are not on this disk, before "
                   "serving: checked by SHA-256, resumed after a cut, in place only when whole")
      ->delimiter(',');
  node->add_option("--fetch-wait-s", na->files.fetch_wait_s,
                   "With --fetch-from: keep retrying (door not up yet, a cut) this long without "
                   "progress")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  node->add_option("--files", na->files.files,
                   "Open a file door on HOST:PORT (e.g. 127.0.0.1:7800; 0.0.0.0 for other "
                   "hosts) serving this node's --dataset, --model, --dlrm-model, --rec-model "
                   "and --model-repository folders to ranks that prove the cluster token (their "
                   "--fetch-from)");
  node->add_option("--files-rate", na->files.files_mbit,
                   "With --files: send at most this many Mbit/s in all (the files share the "
                   "links that serve calls; 0: no cap)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  node->add_option("--model", na->model,
                   "Model directory: with --dataset the node runs a pipeline (sampling, "
                   "gathering, inference) for the coordinator's batches");
  node->add_option("--model-repository", na->serving.repository,
                   "Any rank with a door, --dataset and --model: serve every model of this "
                   "folder (NAME/VERSION/model.toml, Triton's layout; each rank its own copy, "
                   "or fetched with --fetch-from) at the versions its policy picks; a load of "
                   "NAME without a directory at any door re-reads it on every rank");
  node->add_option("--device", na->device,
                   "Any rank with --model: where its large batches run: host (its pool) or cuda "
                   "(a GPU executor per pipeline: sampling, a device tier of rows and forward "
                   "passes on the GPU, the passes on the host with --gnnsched; rank 0's router "
                   "decides for the batches it hands out; fails without a GPU)")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  node->add_option("--device-feature-mb", na->device_feature_mb,
                   "With --device cuda: feature rows (highest FAP first) kept on the GPU, read "
                   "once through the cluster's shards when the rank starts serving; the rest "
                   "are read through them per batch")
      ->capture_default_str();
  node->add_option("--workload", na->workload,
                   "Rank 0 only (other ranks refuse it): serve N requests once members joined, "
                   "print a checksum");
  node->add_option("--expect", na->expect,
                   "Rank 0 only (other ranks refuse it): members to wait for before serving "
                   "(default 0; with the rank from the launcher, every other rank)");
  node->add_option_function<std::string>(
      "--listen",
      [na](const std::string& v) {
        na->door.listen = v;
        na->listen = true;
      },
      "Any rank: serve this node's Cap'n Proto door on HOST:PORT (port 0: a free one) over "
      "the cluster, until SIGINT/SIGTERM (rank 0's: the front door, its coordinator's "
      "batcher; another rank's: its own batcher and pipelines). The door's flags (--metrics, "
      "--http, --grpc, --admin-token-file, --rec-model, ...) are refused without it");
  node->add_option("--calibration", na->serving.calibration,
                   "Any rank with --model: PSGS calibration (spindle calibrate) routing this "
                   "node's batches (rank 0: every pipeline's; a member: its own door's); "
                   "without it the small executor (with --device cuda: the GPU)");
  node->add_option("--policy", na->policy,
                   "Any rank with --calibration or --calibrate: strict | loose | fixed")
      ->check(CLI::IsMember({"strict", "loose", "fixed"}))
      ->capture_default_str();
  node->add_option("--admin-token-file", na->door.admin_token_file,
                   "Any rank's door: Admin token file (created if absent); without it Admin is "
                   "disabled");
  node->add_option("--metrics", na->door.metrics,
                   "Any rank's door: Prometheus metrics on HOST:PORT");
  node->add_option("--access-log", na->door.access_log,
                   "This node's door: one line per call to FILE (see `serve`)");
  node->add_option("--http", na->door.http,
                   "Any rank's door: KServe v2 over HTTP/REST on HOST:PORT");
  node->add_option("--grpc", na->door.grpc, "Any rank's door: KServe v2 over gRPC on HOST:PORT");
  node->add_option("--max-connections", na->door.max_connections,
                   "This node's doors: open connections per door (0: as `serve`)");
  node->add_option("--max-connections-per-peer", na->door.max_connections_per_peer,
                   "This node's doors: connections one address may hold on one door (0: as "
                   "`serve`)");
  node->add_option("--max-queue", na->door.max_queue,
                   "Any rank's door: calls in flight per model before `overloaded` (a hard cap)")
      ->capture_default_str();
  node->add_option("--slo-ms", na->door.slo_ms,
                   "Any rank's door: end-to-end latency objective; calls in flight are limited "
                   "to the measured capacity x half of it (0: only --max-queue)")
      ->capture_default_str();
  node->add_option("--peer-timeout-ms", na->peer_timeout_ms,
                   "Declare a peer down after this long without a message (heartbeats every "
                   "fifth of it; 0: never, CAF's default)")
      ->capture_default_str();
  node->add_option("--replan-drift", na->placement.drift_threshold,
                   "Rank 0 only (other ranks refuse it): re-plan feature placement when the "
                   "observed FAP drifts past this total-variation distance (0: only on request, "
                   "Admin `replan`)")
      ->capture_default_str();
  node->add_option("--replan-min-requests", na->placement.min_requests,
                   "Rank 0 only (other ranks refuse it): requests observed since the last plan "
                   "before drift is judged")
      ->capture_default_str();
  add_pipeline_options(*node, na->serving);
  node->add_option("--forward", na->forwards,
                   "A recommendation model another server serves, as NAME=HOST:PORT[,HOST:PORT"
                   "...]: calls for it at this door go there, to its servers in turn "
                   "(`launch` passes the Hera plan's servers); repeatable");
  node->add_option("--tensor-models", na->door.tensor_models,
                   "Any rank's door: models served over the SplitRPC data path too (the "
                   "built-in sum, or a recommendation model's name: --rec-model, --dlrm-name)")
      ->delimiter(',');
  add_graph_update_options(*node, na->graph);
  node->add_option("--name", na->name,
                   "Name clients call the GNN by at this node's door (default: model.toml's name)");
  add_rec_serving_options(*node, na->door);
  add_type_table_options(*node, na->type_tables);
  on_run(node, [na, node] {
    na->type_tables.given = type_table_flags_given(*node);
    // Rank 0's flags as given; the rank may come from the launcher's environment,
    // so run_node refuses them on any other rank.
    for (const char* flag : {"--workload", "--expect", "--replan-drift", "--replan-min-requests"})
      if (node->count(flag) > 0) na->coordinator_flags.emplace_back(flag);
    status st = refuse_door_flags_without_listen(*node, *na);
    if (st.is_ok()) st = check_calibration_flags(*na);
    if (st.is_ok() && node->count("--device-feature-mb") > 0 && na->device != "cuda")
      st = make_error(errc::invalid_argument,
                      "--device-feature-mb sizes a GPU's device tier: it needs --device cuda");
    if (st.is_ok()) st = run_node(*na, process_argv());
    return st;
  });
  register_launch(app);
  register_cluster_status(app);
}

}  // namespace spindle::apps
