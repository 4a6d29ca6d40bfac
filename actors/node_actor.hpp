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
using ready_atom = caf::atom_constant<caf::atom("ready")>;

/// Spawns the coordinator (rank 0), which publishes its own shard `descriptor`
/// and UCX `bridge` address (either may be empty):
///   (join_atom, rank, name, pid, descriptor) -> (ok_atom, coordinator's bridge address)
///   (ready_atom, rank, bridge address)  the member serves batches (or "" if it only holds rows)
///   (status_atom) -> JSON array: rank, name, pid, alive, joins, descriptor, bridge, ready.
caf::actor spawn_coordinator(caf::actor_system& sys, std::string name, std::string descriptor = {},
                             std::string bridge = {});

struct member_options {
  int rank = 1;
  std::string name;
  std::string descriptor;       // its feature shard's UCX region, or empty
  caf::actor bridge;            // its UCX bridge, told the coordinator's address on join
  bool serves_batches = false;  // if set, ready is sent later with (ready_atom, address)
};

/// Spawns a member node actor that joins `coordinator`. It answers (status_atom)
/// with its own JSON line; (ready_atom, bridge address) passes readiness on.
caf::actor spawn_member(caf::actor_system& sys, caf::actor coordinator, member_options options);

}  // namespace spindle::actors
