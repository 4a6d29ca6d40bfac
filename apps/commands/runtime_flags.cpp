#include "apps/commands/runtime_flags.hpp"

#include <string>

#include "apps/commands/command.hpp"

namespace spindle::apps {

void add_hps_stack_options(CLI::App& cmd, runtime::hps_stack_args& a, const std::string& model_flag) {
  cmd.add_option(model_flag, a.model, "DLRM model directory (spindle model init --arch dlrm)");
  cmd.add_option("--pdb", a.pdb,
                 "RocksDB directory for the tables (filled from the model on first start)");
  cmd.add_option("--hps-config", a.hps_config,
                 "TOML with [hps] defaults and [hps.tables.<name>] overrides "
                 "(also read from the model's model.toml; the files win over flags)");
  cmd.add_option("--vdb", a.vdb, "Level 2: hash_map, redis or none")->capture_default_str();
  cmd.add_option("--vdb-redis", a.vdb_redis, "Redis HOST:PORT for --vdb redis");
  cmd.add_option("--vdb-partitions", a.partitions, "VDB partitions per table")
      ->capture_default_str();
  cmd.add_option("--cache-fraction", a.cache_fraction, "L1 slots as a fraction of each table")
      ->capture_default_str();
  cmd.add_option("--hit-rate-threshold", a.threshold, "Below it misses are fetched synchronously")
      ->capture_default_str();
  cmd.add_option("--refresh-ms", a.refresh_ms, "Refresh the L1 caches this often (0: never)")
      ->capture_default_str();
  cmd.add_option("--updates", a.updates,
                 "Follow online updates of the tables from this Redis HOST:PORT (streams "
                 "spindle:updates:emb<t>, as `spindle hps publish` writes them) into the PDB "
                 "and VDB; the L1 cache takes them at its refresh (--refresh-ms)");
  cmd.add_option("--updates-group", a.updates_group,
                 "The updates' consumer group (default: one of this server's own, from the host "
                 "and the PDB's path: every server applies every update to its own PDB; a "
                 "cluster rank reads in GROUP.rank-N, one group per rank)");
  cmd.add_option("--consumer", a.consumer,
                 "The updates' consumer name (default: the host name; reuse it after a restart "
                 "to resume)");
  cmd.add_flag("--warm-up,!--no-warm-up", a.warm_up,
               "At start, copy every table from the PDB into the in-process VDB, and into the L1 "
               "cache where it holds the whole table (--cache-fraction 1)")
      ->capture_default_str();
}

void add_front_door_options(CLI::App& cmd, runtime::front_door_args& a) {
  cmd.add_option("--listen", a.listen,
                 "Serve the Cap'n Proto front door on HOST:PORT (port 0: a free one)")
      ->capture_default_str();
  cmd.add_option(
      "--admin-token-file", a.admin_token_file,
      "Admin token file (created with a random token if absent); without it Admin is disabled");
  cmd.add_option("--metrics", a.metrics,
                 "Serve Prometheus metrics over HTTP on HOST:PORT (e.g. 127.0.0.1:9400)");
  cmd.add_option("--access-log", a.access_log,
                 "Append one line per call to FILE: time, door, model, seeds or samples, "
                 "status, latency (flushed at least once a second while calls come)");
  cmd.add_option("--http", a.http,
                 "Serve the KServe v2 inference protocol over HTTP/REST on HOST:PORT (Triton's "
                 "and KServe's clients, curl; port 0: a free one)");
  cmd.add_option("--grpc", a.grpc,
                 "Serve the KServe v2 inference protocol over gRPC on HOST:PORT "
                 "(inference.GRPCInferenceService)");
  add_bounded(cmd, "--http-max-body-mb", a.http_max_body_mb,
              "Largest HTTP request body or gRPC message, MiB (larger: 413 / RESOURCE_EXHAUSTED)",
              1, 4096);
  cmd.add_option("--tensor-models", a.tensor_models,
                 "Models served over the SplitRPC data path: the built-in sum, or a --rec-model's "
                 "name (its requests packed as splitrpc/rec_wire.hpp says)")
      ->delimiter(',');
  cmd.add_option("--max-queue", a.max_queue,
                 "Calls in flight per model before `overloaded` (a hard cap)")
      ->capture_default_str();
  cmd.add_option("--slo-ms", a.slo_ms,
                 "End-to-end latency objective: calls in flight are limited to the measured "
                 "capacity x half of it, the rest answered `overloaded` at once (0: only "
                 "--max-queue; live: tunable slo_ms)")
      ->capture_default_str();
  cmd.add_option("--max-connections", a.max_connections,
                 "Open client connections per door (Cap'n Proto, KServe HTTP, metrics; gRPC: "
                 "at most half the doors' descriptor budget, as it holds two descriptors per "
                 "connection); when full, the connection idle longest (1 s or more) is closed "
                 "to make room, else the new one is (0: the descriptor limit less 64, at most "
                 "4096). All doors together use at most the limit less 256, and each keeps an "
                 "eighth of that for itself")
      ->capture_default_str();
  cmd.add_option("--max-connections-per-peer", a.max_connections_per_peer,
                 "Open connections one client address may hold on one door (0: an eighth of "
                 "the doors' descriptor budget); past it, that address's connection idle "
                 "longest makes room, else the new one is closed")
      ->capture_default_str();
  add_bounded(cmd, "--door-poll-us", a.door_poll_us,
              "After a lone client's call or answer, the Cap'n Proto door's thread (and the "
              "KServe gRPC door's) keeps polling this many microseconds before it sleeps, so the client's next call "
              "finds its core awake (on a VM a sleeping core costs tens of microseconds to "
              "wake); never while the door owes answers, nor for 10-20 ms after it owed "
              "two at once, nor after a refused call (0: never poll)",
              0u, 10000u);
  add_rec_serving_options(cmd, a);
}

void add_rec_serving_options(CLI::App& cmd, runtime::front_door_args& a) {
  cmd.add_option("--rec-model", a.rec_models,
                 "Serve a recommendation model (dlrm, ncf, wnd, din; tables in memory) as "
                 "NAME=DIR, with its own worker pool and dynamic batching; repeatable");
  add_bounded(cmd, "--rec-workers", a.rec_workers,
              "Workers each --rec-model (or one loaded later) starts with (live: tunable "
              "workers; the node manager resizes them)",
              1, 1024);
  cmd.add_option("--rec-precision", a.rec_precision,
                 "The MLPs' arithmetic of every --rec-model (and one loaded later): fp32, bf16 "
                 "(bfloat16 on AMX / AVX-512 BF16) or int8 (int8 products on VNNI, each input "
                 "row quantised on the fly; overrides model.toml's precision)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  cmd.add_option("--rec-table-precision", a.rec_table_precision,
                 "How every --rec-model (and one loaded later) holds its embedding tables: fp32, "
                 "int8 or int4 (row-wise quantised, a scale and bias per row; overrides "
                 "model.toml's table_precision)")
      ->check(CLI::IsMember({"fp32", "int8", "int4"}));
  add_hps_stack_options(cmd, a.dlrm, "--dlrm-model");
  cmd.add_option("--node-manager", a.node_manager,
                 "Resize recommendation models' worker pools every manager_period_ms: hera "
                 "(Algorithm 3 over --profiles) or parties (one worker per period on SLA slack)")
      ->check(CLI::IsMember({"hera", "parties"}));
  cmd.add_option("--profiles", a.profiles,
                 "Profile table for --node-manager hera (spindle profile)");
  add_bounded(cmd, "--manager-max-workers", a.manager_max_workers,
              "Workers the node manager may give one model (0: the cores)", 0, 1024);
  cmd.add_option("--dlrm-name", a.dlrm_name,
                 "Name of the DLRM model (default: its model.toml name)");
  cmd.add_option("--dlrm-instances", a.dlrm_instances, "DLRM inference actors")
      ->capture_default_str();
}

void add_device_options(CLI::App& cmd, std::string& device, std::size_t& feature_mb) {
  cmd.add_option("--device", device,
                 "Where large batches run (PSGS's large executor): auto (a CUDA GPU when one is "
                 "usable, else the host pool), host, or cuda (fails without a GPU)")
      ->check(CLI::IsMember({"auto", "host", "cuda"}))
      ->capture_default_str();
  cmd.add_option("--device-feature-mb", feature_mb,
                 "With a GPU: feature rows (highest FAP first) kept in device memory; the rest "
                 "are read from host memory over UVA")
      ->capture_default_str();
}

void add_graph_update_options(CLI::App& cmd, runtime::graph_update_args& a) {
  cmd.add_flag("--graph-updates", a.on,
               "Take graph updates while serving (serve: Admin.updateGraph, `spindle client graph "
               "update`, POST /v2/graph/update, --graph-stream; cluster ranks: --graph-stream "
               "only): edges, nodes and feature rows, each batch logged before it is "
               "acknowledged and visible to every call admitted after (host device only)");
  cmd.add_option("--graph-log", a.log,
                 "The updates' write-ahead log, replayed at start (default DATASET/graph.log; "
                 "on cluster rank N, DATASET/graph.rankN.log)");
  cmd.add_option("--graph-log-sync", a.sync,
                 "data: fdatasync each batch before acknowledging it (survives power loss); "
                 "os: written to the kernel only (survives kill -9, not a power cut)")
      ->check(CLI::IsMember({"data", "os"}))
      ->capture_default_str();
  cmd.add_option("--graph-compact-at", a.compact_at,
                 "Fold the updates into a new base on disk while serving once they change this "
                 "many rows (neighbour lists, feature rows and removed nodes together); the log "
                 "then starts again from it. 0: never")
      ->capture_default_str();
  cmd.add_option("--graph-stream", a.stream,
                 "Also apply update batches read from a Redis Stream at HOST:PORT (needs "
                 "--graph-updates; docs/graph-updates.md gives the entry fields)");
  cmd.add_option("--graph-stream-key", a.stream_key, "The stream's key")->capture_default_str();
  cmd.add_option("--graph-stream-group", a.stream_group,
                 "This server's consumer group (default: from the host name and the graph log's "
                 "path; every server needs a group of its own, as each applies every batch)");
}

void add_type_table_options(CLI::App& cmd, runtime::type_table_args& a) {
  cmd.add_option("--type-table-pdb", a.pdb,
                  "Typed GNNs: read the embedding tables of featureless node types of "
                  "--type-table-min-mb or more from the parameter server's RocksDB PDB in DIR "
                  "(rows loaded from the weights on first use, L1 cache over it) instead of "
                  "holding them in memory");
  cmd.add_option("--type-table-min-mb", a.min_mb,
                  "With --type-table-pdb: the table size from which a type's table is read "
                  "from the parameter server (0: every table)")
      ->capture_default_str();
  cmd.add_option("--type-table-cache", a.cache_fraction,
                  "With --type-table-pdb: L1 cache slots per table row, in (0, 1]")
      ->capture_default_str();
  cmd.add_option("--type-table-vdb", a.vdb,
                  "With --type-table-pdb: none, or hash_map (an in-process VDB between L1 "
                  "and the PDB, filled by misses)")
      ->check(CLI::IsMember({"none", "hash_map"}))
      ->capture_default_str();
  cmd.add_option("--type-table-vdb-mb", a.vdb_mb,
                  "With --type-table-vdb hash_map: the most MiB of rows it holds per table "
                  "(the oldest evicted past it)")
      ->capture_default_str();
  cmd.add_flag("--type-table-keep-old", a.keep_old,
                "With --type-table-pdb: keep the tables of other weights of a tensor a served "
                "model reads (by default dropped once no model here reads them)");
}

std::vector<std::string> type_table_flags_given(const CLI::App& cmd) {
  std::vector<std::string> given;
  for (const char* flag : {"--type-table-pdb", "--type-table-min-mb", "--type-table-cache",
                           "--type-table-vdb", "--type-table-vdb-mb", "--type-table-keep-old"})
    if (cmd.count(flag) > 0) given.emplace_back(flag);
  return given;
}

}  // namespace spindle::apps
