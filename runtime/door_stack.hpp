// The one builder of a server's door stack, used by `serve` (one process, or
// recommendation models only) and by `node` (a cluster rank's door): the gateway
// over the models the caller started, the live graph and its stream, every
// recommendation model the flags name, then the doors until a stop signal.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/gateway.hpp"
#include "runtime/serve_rpc.hpp"

namespace spindle::runtime {

/// What the caller brings to the gateway; everything is optional.
struct door_stack {
  std::vector<actors::gnn_model_binding> gnns;  // served GNNs
  std::vector<actors::rec_model_binding> recs;  // recommendation bindings built here (forwards)
  graph::live_graph* live = nullptr;            // versions, min_version and (doors_update) updates
  bool doors_update = true;                     // false: updates only through the stream
  std::function<graph::stream_follow_stats()> graph_stream;
  actors::model_loader loader;             // Admin.loadModel (recommendation loads added here)
  std::function<std::string()> members;    // a cluster's member list
  /// Run once the gateway holds the models above, before the doors open: loads
  /// at start (a model repository's); an error stops the server.
  std::function<status(actors::gateway&)> before_serving;
  /// Started once the gateway holds every model and stopped (destroyed) when the
  /// doors close, before the gateway goes: e.g. a follower of other doors' loads.
  std::function<std::shared_ptr<void>(actors::gateway&)> while_serving;
  /// Run after the doors closed, before the gateway goes (e.g. stop a stream
  /// whose batches would otherwise wake calls of a gone gateway).
  std::function<void()> on_stop;
};

/// Builds the gateway over `s` and the flags' recommendation models, serves the
/// doors of `a` until a stop signal (see serve_until_signal for `also`,
/// `on_also` and `stopped_by`), and stops them.
status serve_door_stack(caf::actor_system& sys, const front_door_args& a, door_stack s,
                        const std::string& token, const std::vector<int>& also = {},
                        const std::function<bool(int)>& on_also = nullptr,
                        int* stopped_by = nullptr);

}  // namespace spindle::runtime
