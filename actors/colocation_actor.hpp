// Hera's node resource manager loop (Algorithm 3's monitor-and-adjust): an
// actor that asks the gateway for one manage_step() every T_monitor (the
// tunable manager_period_ms). The decisions themselves are colocation/hera's; the
// gateway applies them to the models' worker pools.
#pragma once

#include <caf/all.hpp>

#include "actors/gateway.hpp"

namespace spindle::actors {

/// Its own timer only: nothing else sends it anything.
using colocation_manager_actor = caf::typed_actor<caf::reacts_to<tick_atom>>;

/// `gw` must outlive the actor; stop it with an exit message before the gateway goes.
colocation_manager_actor spawn_colocation_manager(caf::actor_system& sys, gateway& gw);

}  // namespace spindle::actors
