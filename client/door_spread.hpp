// `spindle client load` over several Cap'n Proto doors (a cluster's ranks): one
// queue of calls, one client and thread per door taking calls from it, the
// in-flight window split between them. A call whose door went down (its
// connection broke) is sent once more, to another door; a refusal never is. A
// door that is down is tried again after a back-off (250 ms doubling to 5 s) and
// takes calls again once it answers. Called from one thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::client {

struct door_list {
  std::vector<std::string> endpoints;
  std::string connect;  // as given (--connect), for errors
  int timeout_ms = 30000;
};

/// Runs `calls` over the doors (open loop when `send_at` is non-empty, else
/// closed with `clients` in flight in all). `done` is called once per call,
/// under a lock, with the call's index in `calls`; returns the calls each door
/// answered ok. A door that goes down or comes back is named on stderr; with
/// every door down for `timeout_ms`, the calls left are answered unavailable.
expected<std::map<std::string, std::size_t>> spread_calls(
    const door_list& doors, const std::vector<transport::rpc::gnn_call>& calls, int clients,
    const std::vector<double>& send_at, const transport::rpc::gnn_callback& done);

}  // namespace spindle::client
