#include "actors/pipeline_actor.hpp"

#include "actors/bridge_messages.hpp"

namespace spindle::actors {
namespace {

struct pipeline_state {
  std::unique_ptr<sched::gnn_pipeline> pipeline;
};

caf::behavior pipeline_actor(caf::stateful_actor<pipeline_state>* self, const graph::dataset* ds,
                             const nn::model* model, const sched::psgs_router* router,
                             thread_pool* pool, sched::feature_source features,
                             sched::gnn_pipeline::compute_gate gate) {
  self->state.pipeline =
      std::make_unique<sched::gnn_pipeline>(*ds, *model, *router, *pool, std::move(features));
  self->state.pipeline->set_compute_gate(std::move(gate));
  return {
      [=](run_atom, const batch_job& job) -> sched::batch_result {
        return self->state.pipeline->run(job.requests);
      },
      // A batch from another process, through the UCX bridge.
      [=](bridge_call_atom, const caf::message& m) -> caf::result<bridge_reply> {
        if (!m.match_elements<run_atom, remote_batch>())
          return caf::make_error(caf::sec::runtime_error,
                                 "pipeline: expected (run, remote_batch), got " + to_string(m));
        const auto& rb = m.get_as<remote_batch>(1);
        // The sender's router decided the executor (one routing policy for the
        // whole cluster, changed live on the coordinator); -1 routes here.
        if (rb.executor != -1 && rb.executor != 0 && rb.executor != 1)
          return caf::make_error(caf::sec::runtime_error,
                                 "pipeline: executor " + std::to_string(rb.executor) +
                                     " is not 0 (small), 1 (large) or -1 (route here)");
        auto res = rb.executor < 0 ? self->state.pipeline->run(rb.requests)
                                   : self->state.pipeline->run(
                                         rb.requests, sched::psgs_router::choice(rb.executor));
        return bridge_reply{caf::make_message(to_wire(res))};
      },
  };
}

}  // namespace

caf::actor spawn_pipeline(caf::actor_system& sys, const graph::dataset& ds, const nn::model& model,
                          const sched::psgs_router& router, thread_pool& pool,
                          sched::feature_source features, sched::gnn_pipeline::compute_gate gate) {
  return sys.spawn<caf::detached>(pipeline_actor, &ds, &model, &router, &pool, std::move(features),
                                  std::move(gate));
}

}  // namespace spindle::actors
