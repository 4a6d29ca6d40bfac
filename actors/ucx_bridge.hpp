// The UCX bridge: one actor per process that carries hot-path messages to
// actors in other processes as UCX active messages (docs/architecture.md "Planes"), so a
// batch or its results never pay CAF's middleman round trip. Local actors
// register under a name; (forward_atom, rank, name, message) sends `message` to
// that name on rank's bridge, which asks the target with (bridge_call_atom,
// message) and ships the target's bridge_reply back as the forward's response.
// A peer reported down fails its pending forwards at once, and new ones too
// until it is announced again; a forward with no reply within the timeout fails.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <string>

#include "actors/bridge_messages.hpp"
#include "core/status.hpp"

namespace spindle::actors {

struct bridge_handle {
  caf::actor actor;
  std::string address;  // this bridge's UCX worker address (hex), for peers
};

struct bridge_options {
  int rank = 0;                               // this process's rank (frames carry it)
  std::string transports;                     // UCX_TLS override; empty = UCX's choice
  std::chrono::milliseconds timeout{30'000};  // a forward without a reply fails after this
};

/// Spawns the bridge and starts its UCX channel thread. Messages it handles:
///   (register_atom, name, actor)        local target for frames addressed to `name`
///   (peer_atom, rank, address)          connect (again) to rank's bridge
///   (peer_down_atom, rank)              rank died: fail its pending and new forwards
///   (forward_atom, rank, name, message) -> the remote target's reply content
///   (stats_atom) -> (sent frames, received frames, pending forwards)
expected<bridge_handle> spawn_bridge(caf::actor_system& sys, bridge_options options);

}  // namespace spindle::actors
