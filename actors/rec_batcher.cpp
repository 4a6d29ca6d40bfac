// The recommendation models' dynamic batcher on the gateway's worker pool: a
// worker's turn merges every call queued for a model (up to its sample budget)
// into one forward pass, work-conserving (nothing waits for a batch to fill),
// refuses calls already past their deadline, splits a large batch over idle
// workers, and runs each call alone when the merged batch fails.

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "actors/dlrm_inference_actor.hpp"
#include "actors/gateway_replies.hpp"
#include "actors/gateway_state.hpp"
#include "actors/model_scheduler.hpp"
#include "serving/rec_batch.hpp"

namespace spindle::actors::detail {

void run_pending(rec_entry& e);

namespace {

using transport::rpc::rec_answer;

// Answers one pooled call from its reply (or its own error).
void answer_call(rec_entry& e, detail::pending_rec& c, const dlrm_reply& r) {
  rec_answer a;
  a.server_us = std::uint64_t(ms_since(c.t0) * 1e3);
  if (settle(a, &r, nullptr, c.deadline)) {
    e.c.inferences += std::uint64_t(c.req.batch);
    a.scores = r.scores;
  }
  e.admission.complete();
  e.c.record(a.status, ms_since(c.t0));
  c.done(std::move(a));
}

// Intra-call parallelism: when the pool has idle workers (no call waits for
// them), a batch of at least 2 x kMinChunk samples runs as chunks on them, this
// worker taking one, so one call uses the cores that are free; a busy pool runs
// each batch whole on one core (its GEMMs are single-threaded). A chunk not yet
// started by the time this worker is free is run here (no waiting on a queue).
constexpr std::int64_t kMinChunk = 32;

struct chunked_batch {
  struct chunk {
    dlrm_request req;
    dlrm_reply reply;
    std::atomic<bool> claimed{false};
  };
  std::unique_ptr<chunk[]> chunks;  // chunk holds an atomic: not in a vector
  std::int64_t n = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::int64_t finished = 0;
  void run(std::int64_t i, const hps::rec_runner& runner, const nn::model& model) {
    chunks[i].reply = run_dlrm_batch(runner, model, chunks[i].req);
    std::lock_guard lock(mu);
    ++finished;
    cv.notify_all();
  }
};

dlrm_reply run_batch(rec_entry& e, const dlrm_request& req) {
  const std::int64_t idle = e.b.pool ? std::int64_t(e.b.pool->idle_workers()) : 0;
  const std::int64_t n = std::min(idle + 1, req.batch / kMinChunk);
  if (n < 2 || !e.intra_call.load(std::memory_order_relaxed))
    return run_dlrm_batch(*e.b.runner, *e.b.model, req);
  auto st = std::make_shared<chunked_batch>();
  st->n = n;
  st->chunks = std::make_unique<chunked_batch::chunk[]>(std::size_t(n));
  const serving::rec_batch_view view{req.batch, req.dense, req.sparse};
  for (std::int64_t i = 0; i < n; ++i) {
    auto part = serving::slice_rec_batch(view, req.batch * i / n, req.batch * (i + 1) / n);
    st->chunks[i].req = {part.batch, std::move(part.dense), std::move(part.sparse)};
  }
  const auto* runner = e.b.runner.get();
  const auto* model = e.b.model;
  for (std::int64_t i = 1; i < n; ++i)
    e.b.pool->submit([st, i, runner, model] {
      if (!st->chunks[i].claimed.exchange(true)) st->run(i, *runner, *model);
    });
  for (std::int64_t i = 0; i < n; ++i)
    if (!st->chunks[i].claimed.exchange(true)) st->run(i, *runner, *model);
  {
    std::unique_lock lock(st->mu);
    st->cv.wait(lock, [&] { return st->finished == n; });
  }
  dlrm_reply out;
  for (std::int64_t i = 0; i < n; ++i) {
    auto& r = st->chunks[i].reply;
    if (!r.error) return std::move(r);
    out.scores.insert(out.scores.end(), r.scores.begin(), r.scores.end());
    out.timing = r.timing;
  }
  return out;
}

// Hera's worker pool with work-conserving dynamic batching: a call waits in
// its model's queue and each queued call gives the pool one turn.
class pool_batcher final : public rec_scheduler {
 public:
  std::string_view kind() const override { return "dynamic_batcher"; }
  void submit(std::shared_ptr<rec_entry> e, transport::rpc::rec_call call,
              std::function<void(rec_answer)> done) override {
    const std::uint32_t deadline = call.deadline_us;
    {
      std::lock_guard lock(e->pending_mu);
      // Queued past its own deadline, or the model's SLA for a call without
      // one, a call is answered deadline_exceeded rather than computed late.
      const std::uint32_t queue_deadline = deadline ? deadline : e->queue_deadline_us.load();
      e->pending.push_back({to_dlrm_request(std::move(call)), std::move(done), clock_type::now(),
                            deadline, queue_deadline});
    }
    auto& pool = *e->b.pool;
    pool.submit([e = std::move(e)] { run_pending(*e); });
  }
};

}  // namespace

std::unique_ptr<rec_scheduler> make_pool_batcher() { return std::make_unique<pool_batcher>(); }

// A worker's turn: every call queued for the model (up to max_batch_samples)
// becomes one batch, one forward pass (work-conserving: nothing waits for a
// batch to fill). Calls past their deadline are refused first; if the merged
// batch fails, each call runs alone so a bad call fails only itself.
void run_pending(rec_entry& e) {
  std::vector<detail::pending_rec> calls;
  {
    std::lock_guard lock(e.pending_mu);
    std::int64_t samples = 0;
    const std::int64_t budget = e.max_batch_samples.load();
    while (!e.pending.empty() &&
           (calls.empty() || samples + e.pending.front().req.batch <= budget)) {
      samples += e.pending.front().req.batch;
      calls.push_back(std::move(e.pending.front()));
      e.pending.pop_front();
    }
  }
  std::vector<detail::pending_rec*> live;
  for (auto& c : calls) {
    if (c.queue_deadline > 0 && ms_since(c.t0) * 1e3 > c.queue_deadline) {
      rec_answer a{rpc_status::deadline_exceeded,
                   fmt::format("queued past the deadline of {} us", c.queue_deadline)};
      e.admission.complete();
      e.c.record(a.status, ms_since(c.t0));
      c.done(std::move(a));
      continue;
    }
    live.push_back(&c);
  }
  if (live.empty()) return;
  if (live.size() == 1) {
    e.c.record_execution(std::uint64_t(live[0]->req.batch));
    answer_call(e, *live[0], run_batch(e, live[0]->req));
    return;
  }
  std::vector<serving::rec_batch_view> parts;
  std::vector<std::int64_t> sizes;
  for (auto* c : live) {
    parts.push_back({c->req.batch, c->req.dense, c->req.sparse});
    sizes.push_back(c->req.batch);
  }
  auto merged = serving::merge_rec_batches(parts);
  dlrm_request big{merged.batch, std::move(merged.dense), std::move(merged.sparse)};
  e.c.record_execution(std::uint64_t(big.batch));
  const dlrm_reply r = run_batch(e, big);
  if (!r.error) {  // isolate the fault: each call alone
    for (auto* c : live) {
      e.c.record_execution(std::uint64_t(c->req.batch));
      answer_call(e, *c, run_dlrm_batch(*e.b.runner, *e.b.model, c->req));
    }
    return;
  }
  auto split = serving::split_scores(r.scores, sizes);
  for (std::size_t i = 0; i < live.size(); ++i) {
    dlrm_reply one{std::move(split[i]), {}, r.timing};
    answer_call(e, *live[i], one);
  }
}

}  // namespace spindle::actors::detail
