// `spindle launch`'s flags: it starts every rank of a cluster TOML (local ranks
// as child processes, other hosts through the TOML's launcher), Hera's plan
// servers of its [colocation] section first, relays their output with the rank
// prefix, forwards SIGINT/SIGTERM and restarts ranks that exit with --restart
// (runtime/cluster_launch.hpp).
#include <string>

#include "apps/commands/command.hpp"
#include "runtime/cluster_launch.hpp"

namespace spindle::apps {

using namespace runtime;
namespace {

// Options whose value every rank gets as given (`node` reads them).
void pass_to_every_rank(CLI::App& launch, const std::shared_ptr<launch_args>& la,
                        std::initializer_list<const char*> flags) {
  for (const char* flag : flags)
    launch.add_option_function<std::string>(
        flag,
        [la, flag](const std::string& v) {
          la->serving.insert(la->serving.end(), {flag, v});
        },
        "Passed to every rank (see `node`)");
}

}  // namespace

void register_launch(CLI::App& app) {
  auto la = std::make_shared<launch_args>();
  auto* launch =
      app.add_subcommand("launch",
                         "Start every rank on this host as child processes, relay their output "
                         "and forward SIGINT/SIGTERM; print the command for other hosts");
  launch->add_option("--config", la->config, "Cluster TOML")->required();
  launch->add_option("--dataset", la->dataset,
                     "Dataset for every rank (each holds its shard of the FAP plan)");
  launch->add_option("--model", la->model,
                     "Model for every rank (each runs a pipeline for the coordinator's batches)");
  launch->add_option("--listen", la->listen,
                     "Rank 0 serves the front door on HOST:PORT once every rank is ready (its "
                     "GNN with --dataset and --model, and/or recommendation models); a rank "
                     "whose [[server]] has door = HOST:PORT opens its own there");
  launch->add_option("--admin-token-file", la->admin_token_file,
                     "Every door's Admin token file (rank 0's and the TOML's doors)");
  launch->add_option("--token-file", la->token_file,
                     "The cluster token, handed to every rank as SPINDLE_CLUSTER_TOKEN (default: "
                     "SPINDLE_CLUSTER_TOKEN, else the TOML's token_file on this host)");
  launch->add_flag("--restart", la->restart,
                   "Restart a rank that exits, after a backoff (1 s doubling to 30 s); without it "
                   "an exited rank is reported and left down. A rank that fails before it "
                   "started stops the launch (non-zero exit) either way");
  launch
      ->add_option("--replan-drift", la->replan_drift,
                   "Rank 0 re-plans feature placement past this FAP drift (see `node`)")
      ->check(CLI::Range(0.0, 1e6));
  launch->add_option("--metrics", la->metrics,
                     "Rank 0's door: Prometheus metrics on HOST:PORT (another rank's door: its "
                     "[[server]]'s metrics = HOST:PORT)");
  launch->add_option("--http", la->http,
                     "Rank 0's door: KServe v2 over HTTP/REST on HOST:PORT (another rank's door: "
                     "its [[server]]'s http = HOST:PORT)");
  launch->add_option("--grpc", la->grpc,
                     "Rank 0's door: KServe v2 over gRPC on HOST:PORT (another rank's door: its "
                     "[[server]]'s grpc = HOST:PORT)");
  launch->add_option("--calibration", la->calibration,
                     "Rank 0: PSGS calibration from `spindle calibrate` (see `node`)");
  launch->add_option("--policy", la->policy, "Rank 0 with --calibration: strict | loose | fixed")
      ->check(CLI::IsMember({"strict", "loose", "fixed"}));
  launch->add_flag_callback(
      "--calibrate", [la] { la->serving.push_back("--calibrate"); },
      "Every rank times PSGS routing over the cluster's shards at start (see `node`)");
  launch->add_flag_callback(
      "--graph-updates", [la] { la->serving.push_back("--graph-updates"); },
      "Every rank applies the graph batches of --graph-stream, each in a log of its own "
      "(see `node`)");
  pass_to_every_rank(*launch, la, {"--graph-stream", "--graph-stream-key", "--graph-log-sync"});
  launch->add_option("--files", la->files,
                     "Rank 0 opens its file door on HOST:PORT (rank 0's address, as the other "
                     "ranks reach it) and every other rank fetches its partition and the model "
                     "from it when they are not on its disk (see `node --files`, --fetch-from)");
  pass_to_every_rank(*launch, la, {"--fetch-wait-s", "--files-rate"});
  launch->add_option("--calibration-out", la->calibration_out,
                     "With --calibrate: rank 0 writes the cluster's calibration there");
  pass_to_every_rank(*launch, la,
                     {"--pipelines", "--max-batch", "--split-min", "--batch-deadline-us", "--name",
                      "--gnnsched",
                      "--gnnsched-memory-mb", "--calibrate-batches", "--device",
                      "--device-feature-mb"});
  for (const char* flag :
       {"--rec-model", "--rec-workers", "--dlrm-model", "--dlrm-name", "--dlrm-instances",
        "--hps-config", "--vdb", "--vdb-redis", "--vdb-partitions", "--cache-fraction",
        "--hit-rate-threshold", "--refresh-ms", "--updates", "--updates-group", "--consumer",
        "--model-repository", "--tensor-models", "--max-queue", "--slo-ms", "--max-connections",
        "--max-connections-per-peer"}) {
    auto* o = launch->add_option_function<std::vector<std::string>>(
        flag,
        [la, flag](const std::vector<std::string>& vs) {
          for (const auto& v : vs) la->rec.insert(la->rec.end(), {flag, v});
        },
        "Passed to every rank with a door (see `node`)");
    if (std::string_view(flag) != "--rec-model") o->expected(1);
  }
  launch->add_option("--pdb", la->pdb,
                     "DLRM tables (RocksDB): rank N's in DIR/rank-N, filled on its first start");
  launch->add_option("--type-table-pdb", la->type_table_pdb,
                     "Typed GNNs' large embedding tables on the parameter server (see `node`): "
                     "rank N's in DIR/rank-N, filled on its first start");
  pass_to_every_rank(*launch, la,
                     {"--type-table-min-mb", "--type-table-cache", "--type-table-vdb",
                      "--type-table-vdb-mb"});
  launch->add_flag_callback(
      "--type-table-keep-old", [la] { la->serving.push_back("--type-table-keep-old"); },
      "Every rank keeps other weights' tables in its folder (see `node`)");
  on_run(launch, [la] { return run_launch(*la); });
}

}  // namespace spindle::apps
