// The runs of `spindle client load` for each kind of model and door (batches or
// GNN calls on Cap'n Proto doors, either on a KServe door): warm-up, a sweep's
// window runner and the measured run. Called from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "client/door_load.hpp"
#include "client/door_spread.hpp"
#include "client/load_report.hpp"
#include "client/load_sweep.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::client {

struct load_settings {
  std::size_t requests = 1000, warmup = 100;
  int clients = 8;  // closed loop: calls in flight (KServe: the connection pool)
  double rate = 0;  // open loop: Poisson arrivals per second (0: closed loop)
  std::uint64_t seed = 1;
};

/// A recommendation model's `calls` (sent in turn) on one Cap'n Proto door.
status warm_up_rec(transport::rpc::rpc_client& client,
                   const std::vector<transport::rpc::rec_call>& calls, const load_settings& s);
window_runner rec_runner(transport::rpc::rpc_client& client,
                         const std::vector<transport::rpc::rec_call>& calls,
                         const load_settings& s);
expected<load_outcome> measure_rec(transport::rpc::rpc_client& client,
                                   const std::vector<transport::rpc::rec_call>& calls,
                                   const load_settings& s);

/// GNN calls on the Cap'n Proto door: on `client`, or over `several` doors when given.
status warm_up_gnn(transport::rpc::rpc_client& client, const door_list* several,
                   const std::vector<transport::rpc::gnn_call>& calls, const load_settings& s);
expected<load_outcome> measure_gnn(transport::rpc::rpc_client& client, const door_list* several,
                                   const std::vector<transport::rpc::gnn_call>& calls,
                                   const load_settings& s);

/// One call on a KServe door: `infer(client, i)` answers call i (the warm-up
/// calls are 0 .. warmup-1, the measured ones follow).
struct call_outcome {
  transport::rpc::rpc_status status = transport::rpc::rpc_status::ok;
  std::string message;
};
using door_infer = std::function<call_outcome(transport::kserve::door_client&, std::size_t)>;
status warm_up_door(const door_connect& connect, const load_settings& s, const door_infer& infer);
/// Closed loop: a connection per call in flight; open: the --clients pool.
window_runner door_runner(const door_connect& connect, const load_settings& s,
                          const door_infer& infer);
expected<load_outcome> measure_door(const door_connect& connect, const load_settings& s,
                                    const door_infer& infer, std::uint32_t samples);

}  // namespace spindle::client
