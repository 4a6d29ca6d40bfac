// The in-process workload generator of `spindle serve --workload` (until the
// RPC front door exists): sends N single-request inferences to a batcher at a
// fixed open-loop rate (or keeps C requests outstanding), records end-to-end
// latency and per-stage times, and reports when the last reply arrives.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <vector>

#include "actors/atoms.hpp"
#include "actors/serving_messages.hpp"

namespace spindle::actors {

struct load_result {
  std::vector<double> latency_s;                                   // per answered request
  double sample_s = 0, gather_s = 0, compute_s = 0, queued_s = 0;  // summed over replies
  std::size_t errors = 0;
  std::string first_error;
  double wall_s = 0;
  // With load_spec::keep_answers, per request (in request order): its output, or its error.
  std::vector<std::vector<float>> outputs;
  std::vector<std::string> error_of;
};

struct load_spec {
  std::vector<serving::gnn_request> requests;
  double rate = 0;            // requests per second; 0 = closed loop
  int clients = 4;            // outstanding requests in closed loop
  bool keep_answers = false;  // fill load_result::outputs / error_of
};

/// Spawns the client; it sends (done_atom) to `notify` when every reply is in.
/// `out` is written by the client only until then.
caf::actor spawn_load_client(caf::actor_system& sys, batcher_actor batcher, load_spec spec,
                             std::shared_ptr<load_result> out, caf::actor notify);

}  // namespace spindle::actors
