#include "actors/batcher_actor.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>

namespace spindle::actors {
namespace {

using clock_type = std::chrono::steady_clock;

// A request waiting for its answer: a response promise (a request message) or
// the caller's callback (the door's direct path, gnn_done).
struct pending {
  serving::gnn_request request;
  caf::typed_response_promise<gnn_reply> promise;
  clock_type::time_point arrived;
  gnn_done done;
  template <class T>
  void answer(T&& v) {
    if (promise.pending())
      promise.deliver(std::forward<T>(v));
    else
      done(v);
  }
};

// A closed batch waiting in the shared queue.
struct closed_batch {
  std::vector<pending> items;
  clock_type::time_point closed;
  int attempts = 0;  // pipelines that failed it as a whole (e.g. their process died)
  // The last pipeline that failed it as a whole and that pipeline's rank (-1: unsaid):
  // its retry goes to no pipeline of that rank (to no other stand-in of a dead rank).
  std::size_t failed_on = SIZE_MAX;
  std::int32_t failed_rank = -1;
  caf::error failure;  // what it answers if no other pipeline is left for its retry
};

struct batcher_state {
  std::vector<pipeline_actor> pipelines;
  std::vector<std::size_t> in_flight;  // batches each pipeline holds
  std::vector<bool> down;              // pipelines whose process is down: given no batches
  std::vector<bool> removed;  // taken off the queue (leave_atom): ended once they hold no batch
  std::deque<closed_batch> queue;      // Quiver §4.3: one queue shared by every pipeline
  std::unique_ptr<serving::batch_builder<pending>> builder;
  std::shared_ptr<serving::psgs_router> router;
  std::function<double(const serving::gnn_request&)> psgs_of;
  std::uint64_t batch_seq = 0;
  std::uint64_t armed_seq = UINT64_MAX;  // the open batch whose deadline timer is set
  batcher_stats stats;
};

using batcher_ptr = batcher_actor::stateful_pointer<batcher_state>;

void start_next(batcher_ptr self);

// Frees slot `p` of a pipeline that was removed and ended: the next pipeline added
// takes it, so a queue whose ranks join and leave without end keeps as many slots
// as pipelines it held at once. Its answered batches stay counted for its rank.
void free_slot(batcher_ptr self, std::size_t p) {
  auto& st = self->state;
  auto& stats = st.stats;
  const auto rank = stats.pipeline_rank[p];
  auto it = std::find(stats.departed_rank.begin(), stats.departed_rank.end(), rank);
  if (it == stats.departed_rank.end()) {
    stats.departed_rank.push_back(rank);
    stats.departed_batches.push_back(0);
    it = stats.departed_rank.end() - 1;
  }
  stats.departed_batches[std::size_t(it - stats.departed_rank.begin())] += stats.per_pipeline[p];
  stats.per_pipeline[p] = 0;
  stats.pipeline_rank[p] = -1;
  for (auto& b : st.queue)  // a retry keeps off its failed rank, not off the slot's next pipeline
    if (b.failed_on == p) b.failed_on = SIZE_MAX;
}

// Ends pipeline `p` once it was removed and holds no batch, and frees its slot.
void end_if_removed(batcher_ptr self, std::size_t p) {
  auto& st = self->state;
  if (!st.removed[p] || st.in_flight[p] > 0 || !st.pipelines[p]) return;
  self->send_exit(st.pipelines[p], caf::exit_reason::user_shutdown);
  st.pipelines[p] = pipeline_actor{};
  free_slot(self, p);
}

// Appends a pipeline that runs on `rank` (-1: unsaid), in a freed slot if there is
// one; it takes batches at once.
void add_pipeline(batcher_ptr self, pipeline_actor p, std::int32_t rank) {
  auto& st = self->state;
  for (std::size_t i = 0; i < st.pipelines.size(); ++i)
    if (st.removed[i] && !st.pipelines[i] && st.in_flight[i] == 0) {
      st.pipelines[i] = std::move(p);
      st.down[i] = st.removed[i] = false;
      st.stats.per_pipeline[i] = 0;
      st.stats.pipeline_rank[i] = rank;
      return;
    }
  st.pipelines.push_back(std::move(p));
  st.in_flight.push_back(0);
  st.down.push_back(false);
  st.removed.push_back(false);
  st.stats.per_pipeline.push_back(0);
  st.stats.pipeline_rank.push_back(rank);
}

// Whether pipeline `p` may take `b`: not the pipeline, nor a pipeline of the rank, that failed it.
bool may_take(batcher_ptr self, std::size_t p, const closed_batch& b) {
  if (p == b.failed_on) return false;
  return b.failed_rank < 0 || self->state.stats.pipeline_rank[p] != b.failed_rank;
}

// Whether a pipeline that is up may take `b`.
bool any_up_for(batcher_ptr self, const closed_batch& b) {
  const auto& st = self->state;
  for (std::size_t p = 0; p < st.pipelines.size(); ++p)
    if (!st.down[p] && may_take(self, p, b)) return true;
  return false;
}

// The first queued batch pipeline `p` may take (the queue's end if none).
std::deque<closed_batch>::iterator first_for(batcher_ptr self, std::size_t p) {
  auto& q = self->state.queue;
  return std::find_if(q.begin(), q.end(),
                      [&](const closed_batch& b) { return may_take(self, p, b); });
}

// Answers, with the error that failed them, the retried batches no pipeline that
// is up may take any more (the others went down or left while they waited).
void answer_stranded(batcher_ptr self) {
  auto& q = self->state.queue;
  for (auto it = q.begin(); it != q.end();) {
    if (it->attempts == 0 || any_up_for(self, *it)) {
      ++it;
      continue;
    }
    for (auto& item : it->items) item.answer(it->failure);
    it = q.erase(it);
  }
}

// Runs `batch` on idle pipeline `p`; when it finishes, `p` takes the next queued batch.
// A batch its pipeline failed as a whole (a pipeline in a process that died) goes
// back to the front of the queue once, for another pipeline; requests inside a
// batch that fail on their own (bad seed, unreachable rows) are answered as such.
void run_on(batcher_ptr self, std::size_t p, closed_batch batch) {
  auto& st = self->state;
  ++st.in_flight[p];
  batch_job job;
  for (auto& item : batch.items) job.requests.push_back(item.request);
  auto held = std::make_shared<closed_batch>(std::move(batch));
  const auto started = clock_type::now();  // the end of each request's time in the batcher
  self->request(st.pipelines[p], caf::infinite, run_atom::value, std::move(job))
      .then(
          [=](const serving::batch_result& res) {
            (res.executor == serving::psgs_router::choice::small ? self->state.stats.small
                                                               : self->state.stats.large)++;
            ++self->state.stats.per_pipeline[p];
            for (std::size_t i = 0; i < held->items.size(); ++i) {
              auto& item = held->items[i];
              const double queued = std::chrono::duration<double>(started - item.arrived).count();
              item.answer(reply_of(res, i, queued, item.request.sampler_seed));
            }
            --self->state.in_flight[p];
            end_if_removed(self, p);
            start_next(self);
          },
          [=](caf::error& err) {
            --self->state.in_flight[p];
            held->failed_on = p;
            held->failed_rank = self->state.stats.pipeline_rank[p];
            if (++held->attempts < 2 && any_up_for(self, *held)) {
              ++self->state.stats.retried;
              held->failure = err;
              self->state.queue.push_front(std::move(*held));
            } else {
              for (auto& item : held->items) item.answer(err);
            }
            // After the retry is queued: freeing the slot clears its failed_on.
            end_if_removed(self, p);
            start_next(self);
          });
}

void close_open_batch(batcher_ptr self);

// Hands queued batches to idle pipelines, oldest first: no pipeline has its own
// queue, so a slow batch never holds others behind it while a pipeline is idle.
// Work-conserving: an idle pipeline with nothing queued takes the open batch at
// once, so the deadline only bounds waiting while every pipeline is busy.
void start_next(batcher_ptr self) {
  auto& st = self->state;
  const auto& policy = st.builder->policy();
  for (std::size_t p = 0; p < st.pipelines.size(); ++p) {  // idle pipelines first
    if (st.in_flight[p] > 0 || st.down[p]) continue;
    if (st.queue.empty() && !st.builder->empty() && policy.work_conserving) close_open_batch(self);
    if (st.queue.empty()) return;
    auto it = first_for(self, p);
    if (it == st.queue.end()) continue;
    closed_batch b = std::move(*it);
    st.queue.erase(it);
    run_on(self, p, std::move(b));
  }
  for (std::size_t p = 0; p < st.pipelines.size() && !st.queue.empty(); ++p) {
    if (st.down[p] || st.in_flight[p] >= std::max<std::size_t>(1, policy.pipeline_depth)) continue;
    auto it = first_for(self, p);
    if (it == st.queue.end()) continue;
    closed_batch b = std::move(*it);
    st.queue.erase(it);
    run_on(self, p, std::move(b));
  }
}

// Idle pipelines no queued batch is waiting for.
std::size_t idle_without_work(batcher_ptr self) {
  const auto& st = self->state;
  std::size_t idle = 0;
  for (std::size_t p = 0; p < st.pipelines.size(); ++p)
    if (st.in_flight[p] == 0 && !st.down[p]) ++idle;
  return idle > st.queue.size() ? idle - st.queue.size() : 0;
}

// Closes the open batch into the shared queue: as one batch, or dealt out in
// near-equal parts between the idle pipelines (serving::split_parts).
void close_open_batch(batcher_ptr self) {
  auto& st = self->state;
  auto items = st.builder->take();
  ++st.batch_seq;
  if (items.empty()) return;
  st.stats.requests += items.size();
  const auto now = clock_type::now();
  const std::size_t parts =
      serving::split_parts(items.size(), idle_without_work(self), st.builder->policy().split_min);
  if (parts == 1) {
    ++st.stats.batches;
    st.queue.push_back({std::move(items), now});
    return;
  }
  for (std::size_t k = 0, at = 0; k < parts; ++k) {
    const std::size_t end = items.size() * (k + 1) / parts;
    std::vector<pending> part(std::make_move_iterator(items.begin() + std::ptrdiff_t(at)),
                              std::make_move_iterator(items.begin() + std::ptrdiff_t(end)));
    ++st.stats.batches;
    st.queue.push_back({std::move(part), now});
    at = end;
  }
}

void dispatch(batcher_ptr self) {
  close_open_batch(self);
  start_next(self);
}

bool any_idle(batcher_ptr self) {
  const auto& st = self->state;
  for (std::size_t p = 0; p < st.pipelines.size(); ++p)
    if (st.in_flight[p] == 0 && !st.down[p]) return true;
  return false;
}

// Adds a request to the open batch and closes it when it is full, or at once
// when a pipeline is idle (waiting would only add latency) and no more calls
// come in the same message (`more`: they join the batch first). A batch not
// taken at once closes at its deadline at the latest (Quiver §4.2.2), the timer
// set once per batch, when a call finds every pipeline busy.
void admit(batcher_ptr self, pending item, bool more = false) {
  auto& s = self->state;
  const auto now = item.arrived;
  const double psgs = s.psgs_of(item.request);
  const bool full = s.builder->add(std::move(item), psgs, now);
  const bool take_now = s.builder->policy().work_conserving && any_idle(self);
  if (full || (take_now && !more)) {
    dispatch(self);
  } else if (!take_now && s.armed_seq != s.batch_seq) {
    s.armed_seq = s.batch_seq;
    self->delayed_send(self, s.builder->policy().deadline, flush_atom::value, s.batch_seq);
  }
}

batcher_actor::behavior_type batcher_behavior(
    batcher_ptr self, std::vector<pipeline_actor> pipelines, serving::batch_policy policy,
    std::shared_ptr<serving::psgs_router> router,
    std::function<double(const serving::gnn_request&)> psgs_of, std::vector<std::int32_t> ranks) {
  auto& st = self->state;
  ranks.resize(pipelines.size(), -1);
  for (std::size_t i = 0; i < pipelines.size(); ++i)
    add_pipeline(self, std::move(pipelines[i]), ranks[i]);
  st.builder = std::make_unique<serving::batch_builder<pending>>(policy);
  st.router = std::move(router);
  st.psgs_of = std::move(psgs_of);
  return {
      [=](infer_atom, serving::gnn_request& r) -> caf::typed_response_promise<gnn_reply> {
        auto rp = self->make_response_promise<gnn_reply>();
        admit(self, {std::move(r), rp, clock_type::now(), {}});
        return rp;
      },
      [=](infer_atom, serving::gnn_request& r, gnn_done& done) {
        admit(self, {std::move(r), {}, clock_type::now(), std::move(done)});
      },
      [=](infer_atom, gnn_calls& calls) {
        const auto now = clock_type::now();
        for (std::size_t i = 0; i < calls.requests.size(); ++i)
          admit(self, {std::move(calls.requests[i]), {}, now, std::move(calls.done[i])},
                i + 1 < calls.requests.size());
      },
      [=](flush_atom, std::uint64_t seq) {
        if (seq == self->state.batch_seq && !self->state.builder->empty()) dispatch(self);
      },
      [=](policy_atom, serving::routing_policy p) { self->state.router->set_policy(p); },
      // From the router actor: batches close once their summed PSGS passes this.
      [=](threshold_atom, double psgs) {
        auto p = self->state.builder->policy();
        p.psgs_threshold = psgs;
        self->state.builder->set_policy(p);
      },
      [=](policy_atom, serving::batch_policy p) {
        p.psgs_threshold = self->state.builder->policy().psgs_threshold;
        self->state.builder->set_policy(p);
      },
      [=](stats_atom) { return self->state.stats; },
      [=](fanouts_atom, const std::vector<int>& fanouts) {
        for (const auto& p : self->state.pipelines)
          if (p) self->send(p, fanouts_atom::value, fanouts);
      },
      [=](pipeline_down_atom, const pipeline_actor& p, bool is_down) {
        auto& s = self->state;
        for (std::size_t i = 0; i < s.pipelines.size(); ++i)
          if (s.pipelines[i] == p && !s.removed[i]) s.down[i] = is_down;
        answer_stranded(self);
        start_next(self);
      },
      [=](join_atom, pipeline_actor& p, std::int32_t rank) {
        add_pipeline(self, std::move(p), rank);
        start_next(self);
      },
      // Its batches in flight are still answered (a failed one is retried on
      // another pipeline, as for a pipeline whose process died).
      [=](leave_atom, const pipeline_actor& p) {
        auto& s = self->state;
        for (std::size_t i = 0; i < s.pipelines.size(); ++i)
          if (s.pipelines[i] == p && !s.removed[i]) {
            s.removed[i] = true;
            s.down[i] = true;
            end_if_removed(self, i);
          }
        answer_stranded(self);
      },
  };
}

}  // namespace

gnn_reply reply_of(const serving::batch_result& res, std::size_t i, double queued,
                    std::uint64_t sampler_seed) {
  gnn_reply r;
  r.sampler_seed = sampler_seed;
  // Each request's share of its batch's stage times.
  const double n = double(res.outputs.size());
  r.times = {res.times.sample_s / n, res.times.gather_s / n, res.times.compute_s / n};
  r.queued_s = queued;
  r.batch_requests = std::uint32_t(res.outputs.size());
  r.leads_batch = i == 0;
  r.graph_version = res.graph_version;
  if (res.errors[i].is_ok())
    r.output = res.outputs[i];
  else
    r.error = res.errors[i];
  return r;
}

batcher_actor spawn_batcher(caf::actor_system& sys, std::vector<pipeline_actor> pipelines,
                            serving::batch_policy policy,
                            std::shared_ptr<serving::psgs_router> router,
                            std::function<double(const serving::gnn_request&)> psgs_of,
                            std::vector<std::int32_t> ranks) {
  return sys.spawn(batcher_behavior, std::move(pipelines), policy, std::move(router),
                   std::move(psgs_of), std::move(ranks));
}

}  // namespace spindle::actors
