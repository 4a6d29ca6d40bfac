#include "actors/pipeline_actor.hpp"

namespace spindle::actors {
namespace {

struct pipeline_state {
  std::unique_ptr<sched::gnn_pipeline> pipeline;
};

caf::behavior pipeline_actor(caf::stateful_actor<pipeline_state>* self, const graph::dataset* ds,
                             const nn::model* model, const sched::psgs_router* router,
                             thread_pool* pool, sched::feature_source features) {
  self->state.pipeline =
      std::make_unique<sched::gnn_pipeline>(*ds, *model, *router, *pool, std::move(features));
  return {
      [=](run_atom, const batch_job& job) -> sched::batch_result {
        return self->state.pipeline->run(job.requests);
      },
  };
}

}  // namespace

caf::actor spawn_pipeline(caf::actor_system& sys, const graph::dataset& ds, const nn::model& model,
                          const sched::psgs_router& router, thread_pool& pool,
                          sched::feature_source features) {
  return sys.spawn<caf::detached>(pipeline_actor, &ds, &model, &router, &pool, std::move(features));
}

}  // namespace spindle::actors
