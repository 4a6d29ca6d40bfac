// Messages and typed interfaces of the GNN serving path: the atoms and structs
// the client, batcher and pipeline actors exchange, and what each of those
// actors answers to (`pipeline_actor`, `batcher_actor`). Every type but the
// in-process callbacks (gnn_done, gnn_calls) carries `inspect`; across processes the bridge sends its own wire types
// (bridge_messages.hpp).
#pragma once

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "serving/batching.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::actors {

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

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gnn_reply& x) {
  return f(caf::meta::type_name("gnn_reply"), x.sampler_seed, x.output, x.error, x.times,
           x.queued_s, x.batch_requests, x.leads_batch, x.graph_version);
}

/// Request `i`'s reply out of its batch's result (its share of the stage times,
/// `queued_s` in the batcher); the batcher's and the express lane's answers alike.
gnn_reply reply_of(const serving::batch_result& res, std::size_t i, double queued_s,
                   std::uint64_t sampler_seed);

/// The caller's callback for a GNN request sent to a batcher without a reply
/// (the door's direct path: no forwarder actor, no response message). Called
/// once, on a CAF thread, with the reply or an error; if the last copy goes
/// without a call (the batcher was gone, or ended holding the request) it is
/// called with caf::sec::request_receiver_down, so no call waits for ever. In
/// this process only: it carries a function no serializer can write.
class gnn_done {
 public:
  using fn = std::function<void(const gnn_reply*, const caf::error*)>;
  gnn_done() = default;
  explicit gnn_done(fn f) : st_(std::make_shared<state>(std::move(f))) {}
  void operator()(const gnn_reply& r) const { call(&r, nullptr); }
  void operator()(const caf::error& e) const { call(nullptr, &e); }

 private:
  struct state {
    explicit state(fn f) : f(std::move(f)) {}
    ~state() {
      if (!f) return;
      const caf::error gone = caf::sec::request_receiver_down;
      f(nullptr, &gone);
    }
    fn f;
  };
  void call(const gnn_reply* r, const caf::error* e) const {
    if (!st_ || !st_->f) return;
    auto f = std::move(st_->f);
    st_->f = nullptr;
    f(r, e);
  }
  std::shared_ptr<state> st_;
};

/// Calls a door read in one pass of its event loop, for one batcher, in one
/// message (the door's direct path): requests[i] answered through done[i].
struct gnn_calls {
  std::vector<serving::gnn_request> requests;
  std::vector<gnn_done> done;
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
  // Per slot: the batches its pipeline answered, the cluster rank it runs on (-1:
  // unsaid, or a free slot). A removed pipeline's slot is freed once it holds no
  // batch (a pipeline added later takes it) and its count goes to departed_batches.
  std::vector<std::uint64_t> per_pipeline;
  std::vector<std::int32_t> pipeline_rank;
  std::vector<std::int32_t> departed_rank;     // a rank whose pipelines were freed, once each
  std::vector<std::uint64_t> departed_batches;  // the batches those pipelines answered
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batcher_stats& x) {
  return f(caf::meta::type_name("batcher_stats"), x.batches, x.requests, x.small, x.large,
           x.retried, x.per_pipeline, x.pipeline_rank, x.departed_rank, x.departed_batches);
}

/// A pipeline as a batcher sees it (one here, or a stand-in for one on another
/// rank): a closed batch in, its batch_result out; fanouts changed live.
using pipeline_actor =
    caf::typed_actor<caf::replies_to<run_atom, batch_job>::with<serving::batch_result>,
                     caf::reacts_to<fanouts_atom, std::vector<int>>>;

/// The per-model batcher: a request in, its own answer out (errors in the reply
/// or as the request's error), as a response or through the request's gnn_done; the batch and routing policy, the PSGS
/// batch-closing threshold (from the router actor) and fanouts changed live;
/// a pipeline marked down or up; a pipeline added while it serves (join_atom:
/// the pipeline and the rank it runs on) or removed (leave_atom: given no more
/// batches, its batches in flight still answered, then the batcher ends it and
/// frees its slot for the next pipeline added);
/// its counters; its own deadline timer (flush).
using batcher_actor = caf::typed_actor<
    caf::replies_to<infer_atom, serving::gnn_request>::with<gnn_reply>,
    caf::reacts_to<infer_atom, serving::gnn_request, gnn_done>,
    caf::reacts_to<infer_atom, gnn_calls>,
    caf::reacts_to<flush_atom, std::uint64_t>,
    caf::reacts_to<policy_atom, serving::routing_policy>,
    caf::reacts_to<policy_atom, serving::batch_policy>, caf::reacts_to<threshold_atom, double>,
    caf::reacts_to<fanouts_atom, std::vector<int>>,
    caf::reacts_to<pipeline_down_atom, pipeline_actor, bool>,
    caf::reacts_to<join_atom, pipeline_actor, std::int32_t>,
    caf::reacts_to<leave_atom, pipeline_actor>,
    caf::replies_to<stats_atom>::with<batcher_stats>>;

}  // namespace spindle::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::gnn_done)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::gnn_calls)
