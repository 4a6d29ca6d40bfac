// Cluster membership over CAF's middleman (the control plane, DESIGN.md
// "Planes"): every node publishes a node actor on its configured loopback
// port; rank 0 (the coordinator) accepts joins from the others, monitors them
// (down messages mark a member dead; a restarted node joins again) and answers
// status queries. Messages are atoms, integers and strings only, so nothing
// needs type announcements across processes.
#pragma once

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <string>

namespace spindle::actors {

using join_atom = caf::atom_constant<caf::atom("join")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using ok_atom = caf::atom_constant<caf::atom("ok")>;

/// Spawns the coordinator: (join_atom, rank, name, pid, descriptor) -> ok_atom;
/// (status_atom) -> JSON text listing members, their state and shard descriptors.
caf::actor spawn_coordinator(caf::actor_system& sys, std::string name);

/// Spawns a worker node actor that joins `coordinator` under `rank`, publishing
/// `descriptor` (its feature shard's UCX region, or empty), and answers
/// (status_atom) with its own JSON line.
caf::actor spawn_member(caf::actor_system& sys, caf::actor coordinator, int rank, std::string name,
                        std::string descriptor = {});

}  // namespace spindle::actors
