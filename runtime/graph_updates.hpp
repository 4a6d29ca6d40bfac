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

/// Attaches a live graph to `ds` (ds.live()) whose batches go to the log first.
/// Returns what replay applied.
expected<graph::log_replay> enable_graph_updates(graph::dataset& ds,
                                                 const graph_update_options& o);

}  // namespace spindle::runtime
