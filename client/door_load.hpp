// `spindle client load` on a KServe door (HTTP or gRPC): the same closed and
// open loops as on the Cap'n Proto door, over one connection per thread (each
// KServe call holds its connection until answered, as perf_analyzer's do).
// Closed loop: `threads` connections, each with one call in flight. Open loop:
// call i is due `send_at[i]` s after the start; `threads` connections take the
// calls in order, and latency counts from the due time, so a full pool shows
// as latency, not as fewer calls (no coordinated omission).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.hpp"
#include "transport/kserve/kserve_client.hpp"

namespace spindle::client {

using door_connect = std::function<expected<std::unique_ptr<transport::kserve::door_client>>()>;
/// One call: send call `i` on `client`; `due` is when its latency starts.
using door_call = std::function<void(transport::kserve::door_client& client, std::size_t i,
                                     std::chrono::steady_clock::time_point due)>;

/// Runs calls [0, n) over `threads` connections (each made by `connect` before
/// the first call: any failure is returned; `connected`, when given, is called
/// once they all are, before the first call). Open loop when `send_at` is non-empty.
status run_door_loop(const door_connect& connect, std::size_t n, std::size_t threads,
                     const std::vector<double>& send_at, const door_call& call,
                     const std::function<void()>& connected = nullptr);

/// `connect` for `door` ("http" or "grpc") at `endpoint`.
expected<door_connect> door_connector(const std::string& door, const std::string& endpoint,
                                      int timeout_ms);

}  // namespace spindle::client
