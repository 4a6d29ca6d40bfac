// The inference pipeline actor (Quiver §4.3): samples, gathers and runs the
// model for one batch at a time by calling sched::gnn_pipeline. It blocks while
// it computes, so it is spawned detached (its own thread), never on the CAF
// scheduler. Several pipelines serve one batcher. Registered at the UCX bridge,
// it also answers batches from other processes ((bridge_call_atom, message)).
#pragma once

#include <caf/all.hpp>

#include "actors/serving_messages.hpp"

namespace spindle::actors {

/// Spawns a detached pipeline actor owning a gnn_pipeline over the shared
/// dataset, model and router (which must outlive the actor system).
/// `features` (optional) replaces reading the dataset's own feature matrix, e.g.
/// with a gatherer over shards in other processes.
/// `gate` (optional) runs the forward passes through a device scheduler (GNNSched).
caf::actor spawn_pipeline(caf::actor_system& sys, const graph::dataset& ds, const nn::model& model,
                          const sched::psgs_router& router, thread_pool& pool,
                          sched::feature_source features = {},
                          sched::gnn_pipeline::compute_gate gate = {});

}  // namespace spindle::actors
