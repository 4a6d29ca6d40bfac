// `spindle node`'s flags for how a node serves GNN batches (node_pipelines):
// its pipelines, its door's batch policy, GNNSched and the calibration over
// the cluster. `launch` passes the same values to every rank.
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/cluster_serving.hpp"

namespace spindle::apps {

/// Adds --pipelines, --max-batch, --batch-deadline-us, --gnnsched,
/// --gnnsched-memory-mb, --calibrate, --calibrate-batches and --calibration-out.
void add_pipeline_options(CLI::App& cmd, runtime::node_pipelines& p);

}  // namespace spindle::apps
