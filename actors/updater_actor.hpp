// The updater actor (HPS §6, Fig. 3 step 1): one member of the update consumer
// group. It polls the Redis streams of its tables, applies each message to the
// node's VDB and PDB and acknowledges it, over and over until it is stopped.
// Spawned detached: a poll blocks up to the consumer's block_ms.
#pragma once

#include <caf/all.hpp>

#include "actors/hps_messages.hpp"

namespace spindle::actors {

/// `vdb` / `pdb` may be null and must outlive the actor.
updater_actor spawn_updater(caf::actor_system& sys, hps::update_consumer consumer,
                         hps::volatile_db* vdb, hps::persistent_db* pdb);

}  // namespace spindle::actors
