// The inference pipeline actor (Quiver §4.3): samples, gathers and runs the
// model for one batch at a time by calling serving::gnn_pipeline. It blocks while
// it computes, so it is spawned detached (its own thread, named "spindle-pipe"), never on the CAF
// scheduler. Several pipelines serve one batcher. Registered at the UCX bridge,
// it also answers batches from other processes ((bridge_call_atom, message)).
#pragma once

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/bridge_messages.hpp"
#include "actors/serving_messages.hpp"
#include "colocation/device_scheduler.hpp"

namespace spindle::actors {

/// A pipeline in this process: what a batcher sends it, GNNSched's report of a
/// pass, and batches from other processes through the UCX bridge.
using local_pipeline_actor = pipeline_actor::extend<
    caf::reacts_to<gnnsched_done_atom, std::uint64_t, std::int32_t, std::string>,
    caf::replies_to<bridge_call_atom, caf::message>::with<bridge_reply>>;

/// Spawns a detached pipeline actor owning a gnn_pipeline over the shared
/// dataset, model and router (which must outlive the actor system).
/// `features` (optional) replaces reading the dataset's own feature matrix, e.g.
/// with a gatherer over shards in other processes.
/// `device` (optional) runs the forward passes through GNNSched's device
/// scheduler: the pipeline submits each batch's pass and takes its next batch
/// while the pass waits for its group (answers come when the group ran).
/// `large` (optional) is the pipeline's large executor (a GPU's), else the pool.
local_pipeline_actor spawn_pipeline(caf::actor_system& sys, const graph::dataset& ds,
                                    const nn::model& model, const serving::psgs_router& router,
                                    thread_pool& pool, serving::feature_source features = {},
                                    colocation::device_scheduler* device = nullptr,
                                    std::shared_ptr<serving::batch_executor> large = nullptr);

}  // namespace spindle::actors
