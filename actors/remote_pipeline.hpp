// A local stand-in for a pipeline actor in another process: it takes
// (run_atom, batch_job) like a pipeline, sends the batch through the UCX
// bridge to the pipeline registered as "pipeline" on `rank`, and answers with
// its batch_result. A batcher mixes local pipelines and these freely.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <string>

#include "actors/bridge_messages.hpp"

namespace spindle::actors {

/// The name pipelines register under at their process's bridge.
inline constexpr const char* pipeline_target = "pipeline";

/// The bridge name of a process's pipeline `index`: "pipeline", "pipeline.1", ...
/// (a node running several pipelines registers each under its own name).
std::string pipeline_target_name(int index);

/// With `router`, each batch carries this process's routing decision (summed
/// `psgs_of` of its requests), so one live routing policy governs every
/// pipeline of the cluster; without it the remote pipeline routes by itself.
/// `index` picks which of the rank's pipelines it stands in for.
pipeline_actor spawn_remote_pipeline(
    caf::actor_system& sys, caf::actor bridge, int rank,
    std::shared_ptr<const serving::psgs_router> router = nullptr,
    std::function<double(const serving::gnn_request&)> psgs_of = nullptr, int index = 0);

}  // namespace spindle::actors
