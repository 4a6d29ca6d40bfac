// The Cap'n Proto client's load generators: closed loops (a fixed number of calls
// in flight, GNN, recommendation and tensor calls) and open loops (calls sent at
// given times, whatever the answers do), with per-call latencies.
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "transport/rpc/rpc_client_impl.hpp"

namespace spindle::transport::rpc {

namespace {

// Waits for `all` on the event loop; with `poll_us`, polls until `poll_us` have
// passed since the last answer (rpc_client::poll_answers), then sleeps until the
// next one (`answered` counts them; `wake` is fulfilled by each), and so on.
void wait_polling(kj::WaitScope& ws, kj::Promise<void> all, unsigned poll_us,
                  const std::size_t& answered, kj::Own<kj::PromiseFulfiller<void>>& wake) {
  if (poll_us == 0) return all.wait(ws);
  using clock = std::chrono::steady_clock;
  auto done = all.fork();
  bool finished = false;
  auto watch = done.addBranch()
                   .then([&finished] { finished = true; },
                         [&finished](kj::Exception&&) { finished = true; })  // rethrown below
                   .eagerlyEvaluate(nullptr);
  std::size_t seen = answered;
  auto last = clock::now();
  while (!finished) {
    ws.poll();
    if (answered != seen) seen = answered, last = clock::now();
    if (finished) break;
    if (clock::now() - last < std::chrono::microseconds(poll_us)) {
      sched_yield();  // polling, but letting other runnable threads in
      continue;
    }
    auto next = kj::newPromiseAndFulfiller<void>();  // sleep until an answer or the end
    wake = kj::mv(next.fulfiller);
    next.promise.exclusiveJoin(done.addBranch()).wait(ws);
    last = clock::now();
  }
  done.addBranch().wait(ws);  // a failed chain's exception, as without polling
}

// Keeps `in_flight` calls outstanding until `count` were answered: `one(i)`
// sends call i and resolves once its answer was handed on. With one call in
// flight and `poll_us`, the wait for each answer polls (wait_polling).
void run_chains(kj::WaitScope& ws, std::size_t count, std::size_t in_flight,
                const std::function<kj::Promise<void>(std::size_t)>& one, unsigned poll_us = 0) {
  std::size_t next = 0, answered = 0;
  kj::Own<kj::PromiseFulfiller<void>> wake;
  std::function<kj::Promise<void>()> issue = [&]() -> kj::Promise<void> {
    if (next >= count) return kj::READY_NOW;
    return one(next++).then([&] {
      ++answered;
      if (wake) wake->fulfill(), wake = nullptr;
      return issue();
    });
  };
  const std::size_t chains_n = std::max<std::size_t>(1, in_flight);
  auto chains = kj::heapArrayBuilder<kj::Promise<void>>(chains_n);
  for (std::size_t c = 0; c < chains_n; ++c) chains.add(issue());
  wait_polling(ws, kj::joinPromises(chains.finish()), chains_n == 1 ? poll_us : 0, answered, wake);
}

// An `unavailable` answer naming a transport failure; a broken connection's
// message starts with kDoorDown (another door may answer the call).
template <class Answer>
Answer transport_failure(const kj::Exception& e) {
  const bool down = e.getType() == kj::Exception::Type::DISCONNECTED;
  return Answer{rpc_status::unavailable,
                fmt::format("{}{}", down ? kDoorDown : "", e.getDescription().cStr())};
}

// Call i's reply handed to `done` with its time since `t0`; a transport
// failure becomes an `unavailable` answer naming it.
template <class Results, class Answer>
kj::Promise<void> answer_to(kj::Promise<capnp::Response<Results>> reply, std::size_t i,
                            std::chrono::steady_clock::time_point t0,
                            const std::function<void(std::size_t, const Answer&, double)>& done) {
  return reply.then(
      [&done, i, t0](capnp::Response<Results> r) {
        done(i, detail::read(r.getReply()), seconds_between(t0, std::chrono::steady_clock::now()));
      },
      [&done, i, t0](kj::Exception&& e) {
        done(i, transport_failure<Answer>(e),
             seconds_between(t0, std::chrono::steady_clock::now()));
      });
}

}  // namespace

void rpc_client::poll_answers(unsigned us) { impl_->answer_poll_us = us; }

status rpc_client::run_closed_loop(const std::vector<gnn_call>& calls, std::size_t in_flight,
                                   const gnn_callback& done) {
  return guarded(endpoint_, [&]() -> status {
    auto one = [&](std::size_t i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto req = impl_->inference.inferGnnRequest(detail::size_of(calls[i]));
      detail::write(req.initRequest(), calls[i]);
      return answer_to<::Inference::InferGnnResults, gnn_answer>(req.send(), i, t0, done);
    };
    run_chains(impl_->ws(), calls.size(), in_flight, one, impl_->answer_poll_us);
    return status::ok();
  });
}

status rpc_client::run_closed_loop_rec(const std::function<const rec_call&(std::size_t)>& call_of,
                                       std::size_t calls, std::size_t in_flight,
                                       const rec_callback& done) {
  return guarded(endpoint_, [&]() -> status {
    auto one = [&](std::size_t i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto req = impl_->inference.inferRecRequest(detail::size_of(call_of(i)));
      detail::write(req.initRequest(), call_of(i));
      return answer_to<::Inference::InferRecResults, rec_answer>(req.send(), i, t0, done);
    };
    run_chains(impl_->ws(), calls, in_flight, one, impl_->answer_poll_us);
    return status::ok();
  });
}

status rpc_client::send_rec_all(const std::function<const rec_call&(std::size_t)>& call_of,
                                std::size_t calls, const rec_callback& done) {
  return guarded(endpoint_, [&]() -> status {
    auto replies = kj::heapArrayBuilder<kj::Promise<void>>(calls);
    for (std::size_t i = 0; i < calls; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto req = impl_->inference.inferRecRequest(detail::size_of(call_of(i)));
      detail::write(req.initRequest(), call_of(i));
      kj::Promise<capnp::Response<::Inference::InferRecResults>> sent = req.send();
      replies.add(
          impl_->timer()
              .timeoutAfter(impl_->timeout_ms * kj::MILLISECONDS, kj::mv(sent))
              .then(
                  [&done, i, t0](capnp::Response<::Inference::InferRecResults> r) {
                    done(i, detail::read(r.getReply()),
                         seconds_between(t0, std::chrono::steady_clock::now()));
                  },
                  [&done, i, t0](kj::Exception&& e) {  // no answer: a door down, whatever why
                    done(i,
                         rec_answer{rpc_status::unavailable,
                                    fmt::format("{}{}", kDoorDown, e.getDescription().cStr())},
                         seconds_between(t0, std::chrono::steady_clock::now()));
                  }));
    }
    kj::joinPromises(replies.finish()).wait(impl_->ws());
    return status::ok();
  });
}

status rpc_client::run_tensor_closed_loop(const std::string& model, std::span<const float> payload,
                                          std::size_t calls, std::size_t in_flight, bool split,
                                          const tensor_callback& done) {
  std::uint32_t model_index = 0;
  if (split) {
    if (!impl_->ucx_ep)
      return make_error(errc::invalid_argument, "split closed loop: call open_split() first");
    const auto it = std::find(impl_->split_models.begin(), impl_->split_models.end(), model);
    if (it == impl_->split_models.end())
      return make_error(errc::invalid_argument, "split closed loop: no tensor model '{}' on {}",
                        model, endpoint_);
    model_index = std::uint32_t(it - impl_->split_models.begin());
  }
  return guarded(endpoint_, [&]() -> status {
    std::size_t next = 0;
    auto finish = [&](std::size_t i, auto t0, tensor_answer a) {
      done(i, a, seconds_between(t0, std::chrono::steady_clock::now()));
    };
    std::function<kj::Promise<void>()> issue = [&]() -> kj::Promise<void> {
      if (next >= calls) return kj::READY_NOW;
      const std::size_t i = next++;
      const auto t0 = std::chrono::steady_clock::now();
      auto failed = [&, i, t0](kj::Exception&& e) {
        finish(i, t0, {rpc_status::unavailable, e.getDescription().cStr()});
        return issue();
      };
      if (!split) {
        auto req = impl_->inference.inferTensorRequest();
        req.setModel(text(model));
        req.setPayload(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size_bytes()));
        return req.send().then(
            [&, i, t0](capnp::Response<::Inference::InferTensorResults> r) {
              finish(i, t0, detail::read(r.getReply()));
              return issue();
            },
            failed);
      }
      // The payload first (it lands in the tensor queue), then the control record.
      split_header h{++impl_->next_call, model_index};
      std::byte header[12];
      std::memcpy(header, &h.call_id, 8);
      std::memcpy(header + 8, &h.model, 4);
      if (auto st = impl_->ucx_ep->send_bulk(split_am_id, header, std::as_bytes(payload),
                                             impl_->timeout_ms);
          !st) {
        finish(i, t0, {rpc_status::unavailable, st.message()});
        return issue();
      }
      auto req = impl_->inference.inferSplitRequest();
      req.setModel(text(model));
      req.setCallId(h.call_id);
      req.setBytes(payload.size_bytes());
      return req.send().then(
          [&, i, t0](capnp::Response<::Inference::InferSplitResults> r) {
            finish(i, t0, detail::read(r.getReply()));
            return issue();
          },
          failed);
    };
    auto chains = kj::heapArrayBuilder<kj::Promise<void>>(std::max<std::size_t>(1, in_flight));
    for (std::size_t c = 0; c < std::max<std::size_t>(1, in_flight); ++c) chains.add(issue());
    kj::joinPromises(chains.finish()).wait(impl_->ws());
    return status::ok();
  });
}

namespace {

// Sends call i at send_at_s[i] seconds after the start; `send(i, scheduled)`
// issues it and returns the promise that reports its answer.
// Past `kMaxInFlight` unanswered calls a due call is not sent but reported at
// once as dropped (`dropped(i)`): a rate over the server's capacity must not
// queue without bound in the client (8.46M queued calls took 24 GB).
constexpr std::size_t kMaxInFlight = 10000;

struct ignore_task_errors : kj::TaskSet::ErrorHandler {
  void taskFailed(kj::Exception&&) override {}  // each send reports its own failure
};

template <class Send, class Drop>
void drive_open_loop(kj::Timer& timer, kj::WaitScope& ws, const std::vector<double>& send_at_s,
                     Send send, Drop dropped, bool precise = true) {
  // The event loop's timer.now() is the time of its last poll, which may be
  // long past; a fresh reading keeps send times and latencies on one clock.
  const kj::TimePoint start = kj::systemPreciseMonotonicClock().now();
  const auto wall0 = std::chrono::steady_clock::now();
  ignore_task_errors handler;
  kj::TaskSet replies(handler);
  std::size_t in_flight = 0;
  // Sends on time: the event loop's timers wake with millisecond granularity
  // (epoll), which made idle-server round trips look 0.5 ms slower than they
  // are, so the loop sleeps on a timer only until 1 ms before a send and then
  // polls (running replies as they arrive) until the send time, napping 20 us
  // between polls while more than 100 us remain. (Spinning instead took a whole
  // core per open loop: with several doors on 2 cores the load generator
  // starved the servers it measured, and their p99 grew to 100 ms.)
  for (std::size_t i = 0; i < send_at_s.size(); ++i) {
    const auto at = start + std::int64_t(send_at_s[i] * 1e9) * kj::NANOSECONDS;
    auto& clock = kj::systemPreciseMonotonicClock();
    if (!precise) {
      if (at > clock.now()) timer.atTime(at).wait(ws);
    } else {
      if (at - clock.now() > 2 * kj::MILLISECONDS) timer.atTime(at - kj::MILLISECONDS).wait(ws);
      while (clock.now() < at) {
        ws.poll();
        if (at - clock.now() > 100 * kj::MICROSECONDS) ::usleep(20);
      }
    }
    // kj runs a .then() body lazily, when its result is consumed; the join
    // consumes only at the end, so force it to run as soon as the reply is in.
    // Precise: latency from the scheduled time; else from the actual send.
    const auto from = precise ? wall0 + std::chrono::nanoseconds(std::int64_t(send_at_s[i] * 1e9))
                              : std::chrono::steady_clock::now();
    if (in_flight >= kMaxInFlight) {
      dropped(i, in_flight);
      continue;
    }
    ++in_flight;
    replies.add(send(i, from).then([&in_flight] { --in_flight; }).eagerlyEvaluate(nullptr));
  }
  replies.onEmpty().wait(ws);
}

std::string not_sent(std::size_t in_flight) {
  return fmt::format("{}{} calls in flight, the client's limit", kNotSent, in_flight);
}

// Sends `req` and reports its answer, or a broken connection as `unavailable`,
// to done(i, answer, seconds since `scheduled`).
template <class Request, class Done>
kj::Promise<void> send_and_report(Request& req, std::size_t i,
                                  std::chrono::steady_clock::time_point scheduled,
                                  const Done& done) {
  return req.send().then(
      [&done, i, scheduled](auto r) {
        done(i, detail::read(r.getReply()),
             seconds_between(scheduled, std::chrono::steady_clock::now()));
      },
      [&done, i, scheduled](kj::Exception&& e) {
        const auto failed = transport_failure<gnn_answer>(e);  // same shape for every kind
        done(i, {failed.status, failed.message},
             seconds_between(scheduled, std::chrono::steady_clock::now()));
      });
}

}  // namespace

status rpc_client::run_open_loop(const std::vector<gnn_call>& calls,
                                 const std::vector<double>& send_at_s, const gnn_callback& done) {
  if (send_at_s.size() != calls.size()) {
    return make_error(errc::invalid_argument, "open loop: {} send times for {} calls",
                      send_at_s.size(), calls.size());
  }
  return guarded(endpoint_, [&]() -> status {
    drive_open_loop(
        impl_->timer(), impl_->ws(), send_at_s,
        [&](std::size_t i, auto scheduled) {
          auto req = impl_->inference.inferGnnRequest(detail::size_of(calls[i]));
          detail::write(req.initRequest(), calls[i]);
          return send_and_report(req, i, scheduled, done);
        },
        [&](std::size_t i, std::size_t n) {
          done(i, {rpc_status::overloaded, not_sent(n)}, 0.0);
        });
    return status::ok();
  });
}

status rpc_client::run_open_loop_rec(const std::function<const rec_call&(std::size_t)>& call_of,
                                     const std::vector<double>& send_at_s, const rec_callback& done,
                                     bool precise) {
  return guarded(endpoint_, [&]() -> status {
    drive_open_loop(
        impl_->timer(), impl_->ws(), send_at_s,
        [&](std::size_t i, auto scheduled) {
          auto req = impl_->inference.inferRecRequest(detail::size_of(call_of(i)));
          detail::write(req.initRequest(), call_of(i));
          return send_and_report(req, i, scheduled, done);
        },
        [&](std::size_t i, std::size_t n) {
          rec_answer a;
          a.status = rpc_status::overloaded;
          a.message = not_sent(n);
          done(i, a, 0.0);
        },
        precise);
    return status::ok();
  });
}

}  // namespace spindle::transport::rpc
