// The embedding_cache actor: owner and control point of a node's lookup session
// (its L1 caches). It refreshes the caches periodically and on command (HPS §6,
// Fig. 3 steps 2-5), changes a table's hit-rate threshold live, and reports
// stats. Inference actors of the same process call the thread-safe session
// directly on the hot path (a message hop per table per batch would only add
// latency). Spawned detached: a refresh reads the VDB/PDB and blocks.
#pragma once

#include <caf/all.hpp>

#include "actors/hps_messages.hpp"

namespace spindle::actors {

/// `refresh_interval_ms` = 0: refresh only on (refresh_atom).
embedding_cache_actor spawn_embedding_cache(caf::actor_system& sys,
                                 std::shared_ptr<hps::lookup_session> session,
                                 std::uint32_t refresh_interval_ms);

}  // namespace spindle::actors
