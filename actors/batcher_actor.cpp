#include "actors/batcher_actor.hpp"

namespace spindle::actors {
namespace {

using clock_type = std::chrono::steady_clock;

struct pending {
  sched::gnn_request request;
  caf::response_promise promise;
  clock_type::time_point arrived;
};

struct batcher_state {
  std::vector<caf::actor> pipelines;
  std::vector<int> inflight;
  std::unique_ptr<sched::batch_builder<pending>> builder;
  std::shared_ptr<sched::psgs_router> router;
  std::function<double(const sched::gnn_request&)> psgs_of;
  std::uint64_t batch_seq = 0;
  batcher_stats stats;
};

using batcher_ptr = caf::stateful_actor<batcher_state>*;

gnn_reply reply_for(const sched::batch_result& res, std::size_t i, double queued,
                    std::uint64_t sampler_seed) {
  gnn_reply r;
  r.sampler_seed = sampler_seed;
  // Each request's share of its batch's stage times.
  const double n = double(res.outputs.size());
  r.times = {res.times.sample_s / n, res.times.gather_s / n, res.times.compute_s / n};
  r.queued_s = queued;
  if (res.errors[i].is_ok())
    r.output = res.outputs[i];
  else
    r.error = res.errors[i].to_string();
  return r;
}

// Closes the open batch and sends it to the pipeline with the fewest batches in flight.
void dispatch(batcher_ptr self) {
  auto& st = self->state;
  auto items = st.builder->take();
  ++st.batch_seq;
  if (items.empty()) return;
  std::size_t best = 0;
  for (std::size_t i = 1; i < st.pipelines.size(); ++i)
    if (st.inflight[i] < st.inflight[best]) best = i;
  ++st.inflight[best];
  batch_job job;
  const auto now = clock_type::now();
  auto queued = std::make_shared<std::vector<double>>();
  auto seeds = std::make_shared<std::vector<std::uint64_t>>();
  for (auto& p : items) {
    job.requests.push_back(p.request);
    queued->push_back(std::chrono::duration<double>(now - p.arrived).count());
    seeds->push_back(p.request.sampler_seed);
  }
  auto promises = std::make_shared<std::vector<caf::response_promise>>();
  for (auto& p : items) promises->push_back(std::move(p.promise));
  ++st.stats.batches;
  st.stats.requests += items.size();
  self->request(st.pipelines[best], caf::infinite, run_atom::value, std::move(job))
      .then(
          [=](const sched::batch_result& res) {
            --self->state.inflight[best];
            (res.executor == sched::psgs_router::choice::small ? self->state.stats.small
                                                               : self->state.stats.large)++;
            for (std::size_t i = 0; i < promises->size(); ++i)
              (*promises)[i].deliver(reply_for(res, i, (*queued)[i], (*seeds)[i]));
          },
          [=](caf::error& err) {
            --self->state.inflight[best];
            for (auto& p : *promises) p.deliver(err);
          });
}

caf::behavior batcher_actor(batcher_ptr self, std::vector<caf::actor> pipelines,
                            sched::batch_policy policy, std::shared_ptr<sched::psgs_router> router,
                            std::function<double(const sched::gnn_request&)> psgs_of) {
  auto& st = self->state;
  st.inflight.assign(pipelines.size(), 0);
  st.pipelines = std::move(pipelines);
  st.builder = std::make_unique<sched::batch_builder<pending>>(policy);
  st.router = std::move(router);
  st.psgs_of = std::move(psgs_of);
  return {
      [=](infer_atom, sched::gnn_request& r) -> caf::response_promise {
        auto& s = self->state;
        auto rp = self->make_response_promise();
        const auto now = clock_type::now();
        if (s.builder->empty())  // Quiver §4.2.2: the batch closes at its deadline at the latest
          self->delayed_send(self, s.builder->policy().deadline, flush_atom::value, s.batch_seq);
        double psgs = s.psgs_of(r);
        if (s.builder->add({std::move(r), rp, now}, psgs, now)) dispatch(self);
        return rp;
      },
      [=](flush_atom, std::uint64_t seq) {
        if (seq == self->state.batch_seq && !self->state.builder->empty()) dispatch(self);
      },
      [=](policy_atom, sched::routing_policy p) { self->state.router->set_policy(p); },
      [=](policy_atom, sched::batch_policy p) {
        p.psgs_threshold = self->state.builder->policy().psgs_threshold;
        self->state.builder->set_policy(p);
      },
      [=](stats_atom) { return self->state.stats; },
  };
}

}  // namespace

caf::actor spawn_batcher(caf::actor_system& sys, std::vector<caf::actor> pipelines,
                         sched::batch_policy policy, std::shared_ptr<sched::psgs_router> router,
                         std::function<double(const sched::gnn_request&)> psgs_of) {
  return sys.spawn(batcher_actor, std::move(pipelines), policy, std::move(router),
                   std::move(psgs_of));
}

}  // namespace spindle::actors
