// The per-model batcher actor: collects inference requests into dynamic
// batches (deadline, max size, summed-PSGS threshold; serving::batch_builder),
// work-conserving (a request that finds a pipeline idle goes at once; requests
// wait for the deadline only while every pipeline is busy),
// puts closed batches in one queue that every idle pipeline takes from (Quiver
// §4.3: multiplexed pipelines, no per-pipeline straggler queues), and answers every request
// with its own output or error. Batch policy and routing policy change live.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "actors/serving_messages.hpp"
#include "serving/batching.hpp"

namespace spindle::actors {

/// `router` is shared with the pipelines (its policy is changed through this actor).
/// `ranks`: the cluster rank each of `pipelines` runs on, for the stats (empty: unsaid).
batcher_actor spawn_batcher(caf::actor_system& sys, std::vector<pipeline_actor> pipelines,
                         serving::batch_policy policy, std::shared_ptr<serving::psgs_router> router,
                         std::function<double(const serving::gnn_request&)> psgs_of,
                         std::vector<std::int32_t> ranks = {});

}  // namespace spindle::actors
