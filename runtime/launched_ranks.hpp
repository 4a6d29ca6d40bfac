// The processes `spindle launch` starts and keeps: children whose lines are
// relayed with their label, restarted with a backoff, and sent the stop
// signal launch gets. One owner thread (launch's).
#pragma once

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core/subprocess.hpp"

namespace spindle::runtime {

/// Ranks on these hosts are started by launch itself; others through the launcher.
bool is_this_machine(const std::string& host);
/// Any loopback address ("127.x.y.z", "localhost", "::1").
bool is_loopback(const std::string& host);

/// `sh -c "<launcher with {host} and {rank}> <the rank's command, shell-quoted>"`.
std::vector<std::string> launcher_argv(const std::string& launcher, const std::string& host,
                                       int rank, const std::vector<std::string>& argv);

/// One rank started here, and when to start it again after it exited.
struct launched_rank {
  int rank = 0;
  std::string label;  // how its lines are prefixed: "rank N", or "rank N hera"
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "KEY=VALUE" added to its environment (the cluster token)
  bool started = false;          // it printed "ready" or "listening ..." once
  std::string last_line;         // the last line it printed (its error, when it refused)
  std::optional<child_process> process;
  std::chrono::steady_clock::time_point restart_at{};
  std::chrono::milliseconds backoff{0};
};

/// Starts `argv` as a child that ends when launch does (even when launch is
/// killed) and adds it to `ranks` as `rank`, labelled `label`; `env` is added
/// to its environment (and kept for its restarts).
status spawn_rank(std::vector<launched_rank>& ranks, int rank, std::string label,
                  std::vector<std::string> argv, std::vector<std::string> env = {});

/// Relays the children's lines, reaps ranks that exit (and with `restart`
/// starts them again after a backoff of 1 s doubling to 30 s), until every
/// rank is down or a signal of `set` comes: then forwards it to every rank,
/// waits for them (`grace`, then SIGKILL; at once on a second signal) and says
/// how each exited. A rank that exits non-zero without `restart`, or before it
/// ever started (a refusal: bad flags or data), stops the others the same way
/// and is returned as an error naming the rank, its exit code and last line.
status supervise(std::vector<launched_rank>& ranks, sigset_t set, bool restart,
                 std::chrono::milliseconds grace = std::chrono::seconds(10));

/// In a process `spindle launch` started (SPINDLE_LAUNCH_PID set): SIGTERM when
/// launch dies (even by SIGKILL), so no process it started outlives it; and if
/// launch is already gone, an error (stop now). Elsewhere: nothing.
status follow_launch();

}  // namespace spindle::runtime
