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

/// Sets the policy; overrides the routing point (< 0 restores the calibrated
/// one); describes the tables as JSON (policy, threshold, override, points, owners).
using router_actor = caf::typed_actor<caf::reacts_to<policy_atom, serving::routing_policy>,
                                      caf::reacts_to<threshold_atom, double>,
                                      caf::replies_to<caf::get_atom>::with<std::string>>;

/// `owners` (optional) describes the row ownership table as a JSON object.
router_actor spawn_router(caf::actor_system& sys, std::shared_ptr<serving::psgs_router> table,
                          batcher_actor batcher, std::function<std::string()> owners = {});

/// The batch-closing threshold for a routing point: points of 0 or infinity
/// (curves that never cross, or the fixed policy) do not close batches.
double batch_close_threshold(double routing_point);

}  // namespace spindle::actors
