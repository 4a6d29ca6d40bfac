// What a cluster member does when its coordinator goes: the signals its actors
// raise, a probe of rank 0's port, and the rejoin (re-executing itself once rank
// 0 listens again) or, for a member with a door, the watch that says when.
#pragma once

#include <signal.h>

#include <atomic>
#include <string>
#include <vector>

#include "config/topology.hpp"
#include "core/status.hpp"

namespace spindle::runtime {

/// A member's node actor raises it when the coordinator is seen down; the main
/// thread then waits for a coordinator to listen again and rejoins (rejoin()).
inline constexpr int kCoordinatorLost = SIGUSR1;
/// A member with a door: the lost coordinator listens again (time to rejoin).
inline constexpr int kCoordinatorBack = SIGUSR2;

/// True when something accepts TCP connections on the server's host:port.
bool listening(const config::server_spec& s);

/// Waits (SIGINT/SIGTERM in `stop` still end the process) until rank 0 listens
/// again, then re-executes this process with `argv`; returns only on failure.
status rejoin(const config::topology& topo, const config::server_spec& me, sigset_t stop,
              const std::vector<std::string>& argv);

/// Polls rank 0's port until the coordinator is back, then raises
/// kCoordinatorBack, unless `done` was set first.
void watch_for_coordinator(const std::atomic<bool>& done, const config::server_spec& coord);

}  // namespace spindle::runtime
