// Turns on graph updates for a served dataset: opens (or creates) its graph log,
// replays what it holds onto a new live graph, and attaches that to the dataset
// so every pipeline reads through it. Only the host executor reads a live
// graph; servers on the GPU, clusters and partitions refuse updates by name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "graph/compaction_files.hpp"
#include "graph/compactor.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_log.hpp"
#include "runtime/graph_stream.hpp"

namespace spindle::runtime {

struct graph_update_options {
  std::string log_path;  // empty: DATASET/graph.log
  graph::log_sync sync = graph::log_sync::data;
  std::uint64_t compact_at = 0;  // compactor_options::at_changes (0: never)
  bool warn_other_logs = true;   // false on cluster ranks: the other ranks' logs are expected
};

/// The serving commands' graph-update flags, as given.
struct graph_update_args {
  bool on = false;           // --graph-updates
  std::string log;           // --graph-log FILE
  std::string sync = "data"; // --graph-log-sync data|os
  std::string stream;        // --graph-stream HOST:PORT (Redis)
  std::string stream_key = "spindle:graph";
  std::string stream_group;  // default: graph_stream_group_of(the log)
  std::uint64_t compact_at = 1'000'000;  // --graph-compact-at (0: never)
  bool cluster_rank = false;  // set by rank_shard: one log per rank, the others' expected
};

/// What keeps a served graph taking updates: its compactor and its stream
/// follower (either may be null). Reset the follower before the gateway goes.
struct graph_update_service {
  std::unique_ptr<graph::compactor> compactor;
  std::unique_ptr<graph_stream_follower> stream;
};

/// Graph logs kept outside a dataset are listed in this file of the dataset.
inline constexpr const char* kGraphLogList = "graph-logs.txt";

/// The graph logs a dataset knows: DATASET/graph.log and those listed.
std::vector<std::string> graph_logs_of(const graph::dataset& ds);

/// What the dataset's CSR row holds for an input edge u -> v.
graph::row_direction row_direction_of(const graph::dataset_metadata& m);

/// A live graph's options for `ds` (direction, feature width, base version), no log.
graph::live_graph_options live_options_of(const graph::dataset& ds);
/// Points `o` at the compacted base `files` names (if any: an earlier compaction
/// while serving); returns the base the log belongs to.
expected<graph::csr_view> start_from(const graph::graph_files& files, graph::live_graph_options& o,
                                     const graph::dataset& ds);

/// Refuses a start that would serve a graph other than the one the user
/// updated: a dataset whose graph log holds batches, served without
/// --graph-updates (its base would answer, stale); --graph-log without
/// --graph-updates; updates without an admin token (`no_token`) to send them with.
status check_graph_log_use(const graph::dataset& ds, bool updates, const std::string& log_path,
                           bool no_token);

/// For servers that do not apply updates (cluster ranks, feature shards):
/// refuses a dataset whose graph log holds batches, naming `who`.
status refuse_unapplied_updates(const graph::dataset& ds, std::string_view who);

/// Attaches a live graph to `ds` (ds.live()) whose batches go to the log first,
/// starting from the base and log the last compaction left (if any), and its
/// compactor. Returns what replay applied.
struct enabled_updates {
  graph::log_replay replayed;
  std::unique_ptr<graph::compactor> compactor;
};
expected<enabled_updates> enable_graph_updates(graph::dataset& ds, const graph_update_options& o);

/// The checks above, then (with --graph-updates) the live graph, its compactor
/// and, with --graph-stream, its follower. `no_token`: the server has no admin token.
expected<graph_update_service> start_graph_updates(graph::dataset& ds, const graph_update_args& a,
                                                   bool no_token);

}  // namespace spindle::runtime
