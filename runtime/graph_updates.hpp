// Turns on graph updates for a served dataset: opens (or creates) its graph log,
// replays what it holds onto a new live graph, and attaches that to the dataset
// so every pipeline reads through it. Only the host executor reads a live
// graph; servers on the GPU, clusters and partitions refuse updates by name.
#pragma once

#include <string>

#include "core/status.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_log.hpp"

namespace spindle::runtime {

struct graph_update_options {
  std::string log_path;  // empty: DATASET/graph.log
  graph::log_sync sync = graph::log_sync::data;
};

/// What the dataset's CSR row holds for an input edge u -> v.
graph::row_direction row_direction_of(const graph::dataset_metadata& m);

/// A live graph's options for `ds` (direction, feature width, base version), no log.
graph::live_graph_options live_options_of(const graph::dataset& ds);

/// Refuses a start that would serve a graph other than the one the user
/// updated: a dataset whose graph log holds batches, served without
/// --graph-updates (its base would answer, stale); --graph-log without
/// --graph-updates; updates without an admin token (`no_token`) to send them with.
status check_graph_log_use(const graph::dataset& ds, bool updates, const std::string& log_path,
                           bool no_token);

/// Attaches a live graph to `ds` (ds.live()) whose batches go to the log first.
/// Returns what replay applied.
expected<graph::log_replay> enable_graph_updates(graph::dataset& ds,
                                                 const graph_update_options& o);

}  // namespace spindle::runtime
