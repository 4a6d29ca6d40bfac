#include "actors/batcher_actor.hpp"

#include <deque>

namespace spindle::actors {
namespace {

using clock_type = std::chrono::steady_clock;

struct pending {
  sched::gnn_request request;
  caf::response_promise promise;
  clock_type::time_point arrived;
};

// A closed batch waiting in the shared queue.
struct closed_batch {
  std::vector<pending> items;
  clock_type::time_point closed;
};

struct batcher_state {
  std::vector<caf::actor> pipelines;
  std::vector<bool> busy;
  std::deque<closed_batch> queue;  // Quiver §4.3: one queue shared by every pipeline
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

void start_next(batcher_ptr self);

// Runs `batch` on idle pipeline `p`; when it finishes, `p` takes the next queued batch.
void run_on(batcher_ptr self, std::size_t p, closed_batch batch) {
  auto& st = self->state;
  st.busy[p] = true;
  batch_job job;
  const auto now = clock_type::now();
  auto queued = std::make_shared<std::vector<double>>();
  auto seeds = std::make_shared<std::vector<std::uint64_t>>();
  auto promises = std::make_shared<std::vector<caf::response_promise>>();
  for (auto& item : batch.items) {
    job.requests.push_back(item.request);
    queued->push_back(std::chrono::duration<double>(now - item.arrived).count());
    seeds->push_back(item.request.sampler_seed);
    promises->push_back(std::move(item.promise));
  }
  self->request(st.pipelines[p], caf::infinite, run_atom::value, std::move(job))
      .then(
          [=](const sched::batch_result& res) {
            (res.executor == sched::psgs_router::choice::small ? self->state.stats.small
                                                               : self->state.stats.large)++;
            for (std::size_t i = 0; i < promises->size(); ++i)
              (*promises)[i].deliver(reply_for(res, i, (*queued)[i], (*seeds)[i]));
            self->state.busy[p] = false;
            start_next(self);
          },
          [=](caf::error& err) {
            for (auto& pr : *promises) pr.deliver(err);
            self->state.busy[p] = false;
            start_next(self);
          });
}

// Hands queued batches to idle pipelines, oldest first: no pipeline has its own
// queue, so a slow batch never holds others behind it while a pipeline is idle.
void start_next(batcher_ptr self) {
  auto& st = self->state;
  for (std::size_t p = 0; p < st.pipelines.size() && !st.queue.empty(); ++p) {
    if (st.busy[p]) continue;
    closed_batch b = std::move(st.queue.front());
    st.queue.pop_front();
    run_on(self, p, std::move(b));
  }
}

// Closes the open batch into the shared queue.
void dispatch(batcher_ptr self) {
  auto& st = self->state;
  auto items = st.builder->take();
  ++st.batch_seq;
  if (items.empty()) return;
  ++st.stats.batches;
  st.stats.requests += items.size();
  st.queue.push_back({std::move(items), clock_type::now()});
  start_next(self);
}

caf::behavior batcher_actor(batcher_ptr self, std::vector<caf::actor> pipelines,
                            sched::batch_policy policy, std::shared_ptr<sched::psgs_router> router,
                            std::function<double(const sched::gnn_request&)> psgs_of) {
  auto& st = self->state;
  st.busy.assign(pipelines.size(), false);
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
