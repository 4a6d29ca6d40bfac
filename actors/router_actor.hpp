// The router actor (one per model): the writer of its routing tables. Readers
// on the hot path (batcher, pipelines, remote stand-ins) read the shared
// serving::psgs_router through atomics and never message it; the router changes
// the policy and the PSGS routing point live, keeps the batcher's PSGS
// batch-closing threshold equal to the routing point (Quiver §4.2.2), and
// reports the tables: the policy, the points, and (on a cluster) which
// placement epoch owns which rows.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <string>

#include "actors/serving_messages.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::actors {

/// `owners` (optional) describes the row ownership table as a JSON object.
///   (policy_atom, routing_policy)  sets the policy
///   (threshold_atom, double)       overrides the routing point; < 0 restores the calibrated one
///   (caf::get_atom) -> std::string JSON: policy, threshold, override, points, owners
caf::actor spawn_router(caf::actor_system& sys, std::shared_ptr<serving::psgs_router> table,
                        caf::actor batcher, std::function<std::string()> owners = {});

/// The batch-closing threshold for a routing point: points of 0 or infinity
/// (curves that never cross, or the fixed policy) do not close batches.
double batch_close_threshold(double routing_point);

}  // namespace spindle::actors
