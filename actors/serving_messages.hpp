// Messages of the in-process GNN serving path: atoms and the plain structs the
// client, batcher and pipeline actors exchange. Types made only of data carry
// `inspect`; those still marked unsafe below hold a status or a policy enum
// (in-process only: the bridge sends its own wire types, bridge_messages.hpp).
#pragma once

#include <caf/all.hpp>

#include "serving/batching.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::actors {

using infer_atom = caf::atom_constant<caf::atom("infer")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using policy_atom = caf::atom_constant<caf::atom("policy")>;
/// (fanouts_atom, std::vector<int>): sample with these fanouts from the next
/// batch on (batcher: passed to its pipelines in this process).
using fanouts_atom = caf::atom_constant<caf::atom("fanouts")>;
/// A live threshold change (PSGS routing point, drift, cache hit rate).
using threshold_atom = caf::atom_constant<caf::atom("threshold")>;
/// (pipeline_down_atom, pipeline, bool down): the pipeline's process died or came back.
using pipeline_down_atom = caf::atom_constant<caf::atom("pipedown")>;

/// A request's answer: per-seed outputs, or the error that names the fault.
struct gnn_reply {
  std::uint64_t sampler_seed = 0;  // echoes the request's, to match async replies
  std::vector<float> output;
  status error;  // ok, or the fault by code and message (checked once, at the door)
  serving::stage_times times;
  double queued_s = 0;               // time spent in the batcher
  std::uint32_t batch_requests = 0;  // requests in this request's batch
  bool leads_batch = false;          // the first request of its batch (counts the execution once)
  std::uint64_t graph_version = 0;   // the live graph's version it was computed on
};

/// A closed batch handed to a pipeline.
struct batch_job {
  std::vector<serving::gnn_request> requests;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_job& x) {
  return f(caf::meta::type_name("batch_job"), x.requests);
}

/// Batcher counters for stats.
struct batcher_stats {
  std::uint64_t batches = 0, requests = 0, small = 0, large = 0;
  std::uint64_t retried = 0;  // batches re-queued after their pipeline failed as a whole
  std::vector<std::uint64_t> per_pipeline;  // batches each pipeline answered
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batcher_stats& x) {
  return f(caf::meta::type_name("batcher_stats"), x.batches, x.requests, x.small, x.large,
           x.retried, x.per_pipeline);
}

}  // namespace spindle::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::gnn_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::serving::batch_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::serving::batch_policy)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::serving::routing_policy)
