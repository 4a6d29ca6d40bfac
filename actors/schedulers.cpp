#include <fmt/format.h>

#include <algorithm>

#include "actors/dlrm_inference_actor.hpp"
#include "actors/gateway_replies.hpp"
#include "actors/gateway_state.hpp"
#include "actors/model_scheduler.hpp"

namespace spindle::actors::detail {
namespace {

/// A request handed to the forwarder actor; `done` runs on a CAF thread. The
/// only messages without `inspect`: they carry the caller's callback, which no
/// serializer can write, and never leave this process.
struct gnn_dispatch {
  batcher_actor batcher;
  serving::gnn_request request;
  caf::duration timeout;
  std::function<void(const gnn_reply*, const caf::error*)> done;
};

struct rec_dispatch {
  dlrm_inference_actor instance;
  dlrm_request request;
  caf::duration timeout;
  std::function<void(const dlrm_reply*, const caf::error*)> done;
};

}  // namespace
}  // namespace spindle::actors::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::detail::gnn_dispatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::detail::rec_dispatch)

namespace spindle::actors::detail {

using transport::rpc::gnn_answer;
using transport::rpc::rec_answer;

caf::behavior gateway_forwarder(caf::event_based_actor* self) {
  return {
      [=](gnn_dispatch& d) {
        self->request(d.batcher, d.timeout, infer_atom::value, std::move(d.request))
            .then([done = d.done](gnn_reply& r) { done(&r, nullptr); },
                  [done = d.done](caf::error& e) { done(nullptr, &e); });
      },
      [=](rec_dispatch& d) {
        self->request(d.instance, d.timeout, dlrm_atom::value, std::move(d.request))
            .then([done = d.done](dlrm_reply& r) { done(&r, nullptr); },
                  [done = d.done](caf::error& e) { done(nullptr, &e); });
      },
  };
}

namespace {

// A CAF duration (a deadline's timeout) as a std::chrono one.
std::chrono::nanoseconds chrono_of(const caf::duration& d) {
  const auto n = std::chrono::nanoseconds::rep(d.count);
  switch (d.unit) {
    case caf::time_unit::minutes: return std::chrono::minutes(n);
    case caf::time_unit::seconds: return std::chrono::seconds(n);
    case caf::time_unit::milliseconds: return std::chrono::milliseconds(n);
    case caf::time_unit::microseconds: return std::chrono::microseconds(n);
    default: return std::chrono::nanoseconds(n);
  }
}

// A call with a deadline held in a door's turn: it goes through the forwarder,
// whose request times out at the deadline.
struct timed_call {
  serving::gnn_request request;
  clock_type::time_point due;  // when its deadline passes (its timeout from the read)
  std::function<void(const gnn_reply*, const caf::error*)> done;
};

// The calls this thread holds while a door's turn is open, by batcher (with the
// model's express lane, or null, and the forwarder of its calls with a deadline).
struct held_calls {
  batcher_actor batcher;
  serving::express_lane* express = nullptr;
  caf::actor forwarder;
  gnn_calls calls;
  std::vector<timed_call> timed;
};
struct held_sends {
  bool holding = false;
  std::vector<held_calls> by_batcher;
};
thread_local held_sends held;

// Runs `requests` on this thread through the model's express lane and answers
// them, when the lane takes them (the model idle); false: not run.
template <class Done>
bool run_express(serving::express_lane* express,
                 const std::vector<serving::gnn_request>& requests, Done& done) {
  if (!express) return false;
  auto res = express->try_run(requests, requests.size());  // each entered at submit
  if (!res) return false;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto r = reply_of(*res, i, 0.0, requests[i].sampler_seed);
    done(i, r);
  }
  return true;
}

}  // namespace

void hold_gnn_sends() { held.holding = true; }

namespace {

// A turn's calls of one model run here through its express lane when it takes
// them all (those with a deadline too: one turn's calls are judged together, so
// a busy door's calls are never run one by one on its thread); false: not run.
bool run_turn_express(held_calls& h) {
  if (!h.express) return false;
  auto& calls = h.calls;
  if (h.timed.empty()) {
    auto answer = [&calls](std::size_t i, const gnn_reply& r) { calls.done[i](r); };
    return run_express(h.express, calls.requests, answer);
  }
  const std::size_t untimed = calls.requests.size();
  std::vector<serving::gnn_request> all;
  all.reserve(untimed + h.timed.size());
  for (auto& r : calls.requests) all.push_back(std::move(r));
  for (auto& t : h.timed) all.push_back(std::move(t.request));
  auto answer = [&](std::size_t i, const gnn_reply& r) {
    if (i < untimed)
      calls.done[i](r);
    else
      h.timed[i - untimed].done(&r, nullptr);
  };
  if (run_express(h.express, all, answer)) return true;
  for (std::size_t i = 0; i < untimed; ++i) calls.requests[i] = std::move(all[i]);
  for (std::size_t i = 0; i < h.timed.size(); ++i) h.timed[i].request = std::move(all[untimed + i]);
  return false;
}

}  // namespace

void release_gnn_sends() {
  held.holding = false;
  auto sends = std::move(held.by_batcher);
  held.by_batcher.clear();
  for (auto& h : sends) {
    if (run_turn_express(h)) continue;
    for (auto& t : h.timed) {  // what is left of its deadline, which runs from the read
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(t.due - clock_type::now());
      if (left.count() <= 0) {
        const caf::error late = caf::sec::request_timeout;
        t.done(nullptr, &late);
        continue;
      }
      caf::anon_send(h.forwarder, gnn_dispatch{h.batcher, std::move(t.request),
                                               caf::duration(left), std::move(t.done)});
    }
    auto& calls = h.calls;
    if (calls.requests.empty()) continue;
    if (calls.requests.size() == 1)
      caf::anon_send(h.batcher, infer_atom::value, std::move(calls.requests[0]),
                     std::move(calls.done[0]));
    else
      caf::anon_send(h.batcher, infer_atom::value, std::move(calls));
  }
}

// A call without a deadline goes straight to the batcher with its callback: one
// message per call instead of three (to the forwarder, its request to the
// batcher, the batcher's response), or one for all the calls a door read in one
// pass of its event loop (hold_gnn_sends), and the batcher answers a closed
// batch's calls one after another on its thread. A call with a deadline keeps
// the forwarder, whose request times out at the deadline (held in a turn too).
void dispatch_gnn(const caf::actor& forwarder, const batcher_actor& batcher,
                  serving::express_lane* express, serving::gnn_request request,
                  caf::duration timeout,
                  std::function<void(const gnn_reply*, const caf::error*)> done) {
  if (held.holding) {  // in a door's turn: handed on, or run here, at its end
    auto it = std::find_if(held.by_batcher.begin(), held.by_batcher.end(),
                           [&](const auto& e) { return e.batcher == batcher; });
    if (it == held.by_batcher.end())
      it = held.by_batcher.insert(it, {batcher, express, forwarder, {}, {}});
    if (timeout.valid()) {
      const auto due = clock_type::now() + chrono_of(timeout);
      it->timed.push_back({std::move(request), due, std::move(done)});
      return;
    }
    it->calls.requests.push_back(std::move(request));
    it->calls.done.emplace_back(std::move(done));
    return;
  }
  // Outside a turn every call is handed on. The KServe HTTP door never opens
  // one: run on its threads, a lone call held them for the model's work, and
  // under overload the calls then queued in the door instead of being refused at
  // admission (chaos_overload_test). The gRPC door opens a turn only for a call
  // that finds it empty and quiet (transport/kserve/lone_call_gate.hpp).
  if (!timeout.valid()) {
    caf::anon_send(batcher, infer_atom::value, std::move(request), gnn_done(std::move(done)));
    return;
  }
  caf::anon_send(forwarder, gnn_dispatch{batcher, std::move(request), timeout, std::move(done)});
}

namespace {

// GNN calls go to the model's batcher actor (GNNSched's or Quiver's batching,
// PSGS routing and the forward pass live behind it).
class batcher_scheduler final : public gnn_scheduler {
 public:
  batcher_scheduler(batcher_actor batcher, caf::actor forwarder)
      : batcher_(std::move(batcher)), forwarder_(std::move(forwarder)) {}
  std::string_view kind() const override { return "batcher"; }
  void submit(std::shared_ptr<gnn_entry> e, transport::rpc::gnn_call call,
              std::function<void(gnn_answer)> done) override {
    const auto t0 = clock_type::now();
    const std::uint32_t deadline = call.deadline_us;
    const std::size_t seeds = call.seeds.size();
    const bool pairs = call.pairs;
    // Checked at the door: the widths of the named outputs (empty: the model's output).
    auto widths = serving::named_output_widths(call.outputs, pairs, seeds, *e->b.model);
    // Counted outstanding until answered: the express lane runs only while none is.
    serving::express_lane* express = e->b.express.get();
    if (express) express->enter(1);
    dispatch_gnn(forwarder_, batcher_, express,
                 {std::move(call.seeds), call.sampler_seed, pairs, std::move(call.outputs),
                  std::move(call.node_type)},
                 timeout_of(deadline),
                 [e = std::move(e), done = std::move(done), t0, deadline, seeds, pairs,
                  widths = widths ? std::move(*widths) : std::vector<std::uint32_t>{}](
                     const gnn_reply* r, const caf::error* err) {
                   if (e->b.express) e->b.express->leave(1);
                   e->admission.complete();
                   gnn_answer a;
                   const double ms = ms_since(t0);
                   a.server_us = std::uint64_t(ms * 1e3);
                   if (r) record_reply(*e, *r);
                   if (settle(a, r, err, deadline)) {
                     e->c.inferences += seeds;
                     a.width = pairs ? 1u : std::uint32_t(e->b.model->desc().out);
                     if (!widths.empty()) {
                       a.width = 0;
                       for (auto w : widths) a.width += w;
                       a.widths = widths;
                     }
                     a.outputs = r->output;
                   }
                   if (r) a.graph_version = r->graph_version;
                   e->c.record(a.status, ms);
                   done(std::move(a));
                 });
  }

 private:
  // The batcher's own figures: queueing, batch sizes and stage times.
  static void record_reply(gnn_entry& e, const gnn_reply& r) {
    e.c.queue_us += std::uint64_t(r.queued_s * 1e6);
    if (r.leads_batch) e.c.record_execution(r.batch_requests);
    if (!r.error) return;
    e.c.batching.observe(r.queued_s);
    e.c.sampling.observe(r.times.sample_s);
    e.c.gathering.observe(r.times.gather_s);
    e.c.compute.observe(r.times.compute_s);
  }

  batcher_actor batcher_;
  caf::actor forwarder_;
};

// A model another server serves (a Hera plan server): admitted here, batched
// and answered there.
class forwarding_scheduler final : public rec_scheduler {
 public:
  std::string_view kind() const override { return "forward"; }
  void submit(std::shared_ptr<rec_entry> e, transport::rpc::rec_call call,
              std::function<void(rec_answer)> done) override {
    const auto t0 = clock_type::now();
    const std::uint64_t samples = call.batch;
    auto& forward = e->b.forward;
    forward(std::move(call), [e = std::move(e), done = std::move(done), t0, samples](rec_answer a) {
      e->admission.complete();
      if (a.status == rpc_status::ok) {
        e->c.record_execution(samples);
        e->c.inferences += samples;
      }
      e->c.record(a.status, ms_since(t0));
      done(std::move(a));
    });
  }
};

// One DLRM inference actor per call, taken in turn (a model served without
// Hera's worker pool).
class actor_scheduler final : public rec_scheduler {
 public:
  actor_scheduler(std::vector<dlrm_inference_actor> instances, caf::actor forwarder)
      : instances_(std::move(instances)), forwarder_(std::move(forwarder)) {}
  std::string_view kind() const override { return "actors"; }
  void submit(std::shared_ptr<rec_entry> e, transport::rpc::rec_call call,
              std::function<void(rec_answer)> done) override {
    const auto t0 = clock_type::now();
    const std::uint32_t deadline = call.deadline_us;
    const std::uint64_t samples = call.batch;
    const auto& instance = instances_[next_++ % instances_.size()];
    caf::anon_send(forwarder_,
                   rec_dispatch{instance, to_dlrm_request(std::move(call)), timeout_of(deadline),
                                [e = std::move(e), done = std::move(done), t0, deadline, samples](
                                    const dlrm_reply* r, const caf::error* err) {
                                  e->admission.complete();
                                  rec_answer a;
                                  const double ms = ms_since(t0);
                                  a.server_us = std::uint64_t(ms * 1e3);
                                  if (r) e->c.record_execution(samples);
                                  if (settle(a, r, err, deadline)) {
                                    e->c.inferences += samples;
                                    a.scores = r->scores;
                                  }
                                  e->c.record(a.status, ms);
                                  done(std::move(a));
                                }});
  }

 private:
  std::vector<dlrm_inference_actor> instances_;
  caf::actor forwarder_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace

std::unique_ptr<gnn_scheduler> make_gnn_scheduler(const gnn_model_binding& b,
                                                  caf::actor forwarder) {
  return std::make_unique<batcher_scheduler>(b.batcher, std::move(forwarder));
}

std::unique_ptr<rec_scheduler> make_rec_scheduler(const rec_model_binding& b,
                                                  caf::actor forwarder) {
  if (b.forward) return std::make_unique<forwarding_scheduler>();
  if (b.pool) return make_pool_batcher();
  return std::make_unique<actor_scheduler>(b.instances, std::move(forwarder));
}

}  // namespace spindle::actors::detail
