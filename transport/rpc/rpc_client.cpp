#include "transport/rpc/rpc_client.hpp"

#include <unistd.h>

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>

#include "transport/rpc/codec.hpp"
#include "transport/ucx/net_devices.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::transport::rpc {

using detail::str;
using detail::text;

struct rpc_client::impl {
  capnp::EzRpcClient ez;
  ::Spindle::Client root;
  ::Inference::Client inference;
  ::Admin::Client admin;
  int timeout_ms;
  // SplitRPC data path (after open_split): this thread owns the worker.
  std::optional<ucx::context> ucx_ctx;
  std::optional<ucx::worker> ucx_worker;
  std::optional<ucx::endpoint> ucx_ep;
  std::vector<std::string> split_models;
  std::uint64_t next_call = 0;

  impl(const std::string& host, unsigned port, int timeout)
      : ez(host, port, limits()),
        root(ez.getMain<::Spindle>()),
        inference(root.inferenceRequest().send().getInference()),
        admin(root.adminRequest().send().getAdmin()),
        timeout_ms(timeout) {}

  static capnp::ReaderOptions limits() {
    capnp::ReaderOptions o;
    o.traversalLimitInWords = (256ull << 20) / 8;
    return o;
  }

  kj::WaitScope& ws() { return ez.getWaitScope(); }
  kj::Timer& timer() { return ez.getIoProvider().getTimer(); }

  template <class T>
  T wait(kj::Promise<T> p) {
    return timer().timeoutAfter(timeout_ms * kj::MILLISECONDS, kj::mv(p)).wait(ws());
  }
};

namespace {

template <class F>
auto guarded(const std::string& endpoint, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const kj::Exception& e) {
    return make_error(errc::unavailable, "rpc {}: {}", endpoint, e.getDescription().cStr());
  }
}

template <class Results>
admin_reply admin_of(Results& r) {
  admin_reply a;
  a.status = detail::from_wire(r.getStatus());
  a.message = str(r.getMessage());
  return a;
}

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

std::vector<std::string> rpc_client::split_endpoints(const std::string& endpoints) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= endpoints.size()) {
    const auto comma = std::min(endpoints.find(',', at), endpoints.size());
    if (comma > at) out.push_back(endpoints.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

expected<std::unique_ptr<rpc_client>> rpc_client::connect_any(const std::string& endpoints,
                                                              int timeout_ms,
                                                              std::vector<std::string>* skipped) {
  const auto doors = split_endpoints(endpoints);
  if (doors.empty())
    return make_error(errc::invalid_argument, "--connect '{}': no HOST:PORT given", endpoints);
  std::string tried;
  for (const auto& e : doors) {
    auto client = connect(e, timeout_ms);
    if (client) return client;
    if (skipped) skipped->push_back(client.error().message());
    tried += (tried.empty() ? "" : "; ") + client.error().message();
  }
  return make_error(errc::unavailable, "--connect {}: no door answered ({})", endpoints, tried);
}

expected<std::unique_ptr<rpc_client>> rpc_client::connect(const std::string& endpoint,
                                                          int timeout_ms) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return make_error(errc::invalid_argument, "--connect '{}': expected HOST:PORT", endpoint);
  }
  unsigned port = 0;
  try {
    port = unsigned(std::stoul(endpoint.substr(colon + 1)));
  } catch (const std::exception&) {
    return make_error(errc::invalid_argument, "--connect '{}': bad port", endpoint);
  }
  std::unique_ptr<rpc_client> c;
  SPINDLE_TRY(guarded(endpoint, [&]() -> status {
    auto i = std::make_unique<impl>(endpoint.substr(0, colon), port, timeout_ms);
    // The bootstrap goes out now, not at the first call: a server closes a
    // connection that sends nothing within its handshake deadline.
    i->wait(i->root.whenResolved());
    c.reset(new rpc_client(std::move(i), endpoint));
    return status::ok();
  }));
  SPINDLE_ASSIGN_OR_RETURN(std::uint32_t v, c->server_version());
  if (v < 1)
    return make_error(errc::unsupported, "rpc {}: server speaks schema version {}", endpoint, v);
  return c;
}

rpc_client::rpc_client(std::unique_ptr<impl> i, std::string endpoint)
    : impl_(std::move(i)), endpoint_(std::move(endpoint)) {}
rpc_client::~rpc_client() = default;

expected<std::uint32_t> rpc_client::server_version() {
  return guarded(endpoint_, [&]() -> expected<std::uint32_t> {
    return impl_->wait(impl_->inference.versionRequest().send()).getVersion();
  });
}

expected<std::vector<model_info>> rpc_client::models() {
  return guarded(endpoint_, [&]() -> expected<std::vector<model_info>> {
    auto r = impl_->wait(impl_->inference.modelsRequest().send());
    std::vector<model_info> out;
    for (auto m : r.getModels()) {
      out.push_back({str(m.getName()), str(m.getKind()), str(m.getArch()), m.getInputWidth(),
                     m.getOutputWidth()});
      for (auto rows : m.getTableRows()) out.back().table_rows.push_back(rows);
      out.back().tables = std::uint32_t(out.back().table_rows.size());
    }
    return out;
  });
}

expected<bool> rpc_client::server_ready() {
  return guarded(endpoint_, [&]() -> expected<bool> {
    return impl_->wait(impl_->inference.versionRequest().send()).getReady();
  });
}

expected<gnn_answer> rpc_client::infer_gnn(const gnn_call& call) {
  return guarded(endpoint_, [&]() -> expected<gnn_answer> {
    auto req = impl_->inference.inferGnnRequest();
    detail::write(req.initRequest(), call);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

expected<std::vector<gnn_answer>> rpc_client::infer_gnn_batch(const std::vector<gnn_call>& calls) {
  return guarded(endpoint_, [&]() -> expected<std::vector<gnn_answer>> {
    auto req = impl_->inference.inferGnnBatchRequest();
    auto list = req.initRequests(calls.size());
    for (unsigned i = 0; i < calls.size(); ++i) detail::write(list[i], calls[i]);
    auto resp = impl_->wait(req.send());
    std::vector<gnn_answer> out;
    for (auto r : resp.getReplies()) out.push_back(detail::read(r));
    // A call over the server's limits is refused whole, with one reply.
    if (out.size() != calls.size() && out.size() == 1 && out[0].status != rpc_status::ok)
      return make_error(errc::invalid_argument, "{}", out[0].message);
    if (out.size() != calls.size())
      return make_error(errc::corrupt_data, "inferGnnBatch: {} replies for {} requests", out.size(),
                        calls.size());
    return out;
  });
}

expected<rec_answer> rpc_client::infer_rec(const rec_call& call) {
  return guarded(endpoint_, [&]() -> expected<rec_answer> {
    auto req = impl_->inference.inferRecRequest();
    detail::write(req.initRequest(), call);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

expected<tensor_answer> rpc_client::infer_tensor(const std::string& model,
                                                 std::span<const float> payload,
                                                 std::uint32_t deadline_us) {
  return guarded(endpoint_, [&]() -> expected<tensor_answer> {
    auto req = impl_->inference.inferTensorRequest();
    req.setModel(text(model));
    req.setPayload(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size_bytes()));
    req.setDeadlineUs(deadline_us);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

status rpc_client::open_split() {
  if (impl_->ucx_ep) return status::ok();
  std::vector<std::uint8_t> address;
  SPINDLE_TRY(guarded(endpoint_, [&]() -> status {
    auto r = impl_->wait(impl_->inference.openSplitRequest().send());
    auto s = r.getSession();
    address.assign(s.getWorkerAddress().begin(), s.getWorkerAddress().end());
    impl_->split_models.clear();
    for (auto m : s.getModels()) impl_->split_models.push_back(str(m));
    return status::ok();
  }));
  // A client of a server on this machine needs no UCX listener elsewhere.
  if (const auto host = endpoint_.substr(0, endpoint_.rfind(':')); ucx::interface_of(host))
    SPINDLE_TRY(ucx::restrict_to_host(host));
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  impl_->ucx_ctx.emplace(std::move(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(*impl_->ucx_ctx));
  impl_->ucx_worker.emplace(std::move(w));
  SPINDLE_ASSIGN_OR_RETURN(auto ep, ucx::endpoint::connect(*impl_->ucx_worker, address));
  impl_->ucx_ep.emplace(std::move(ep));
  // Call ids: a random session prefix, then a counter (unique per session).
  impl_->next_call = std::uint64_t(std::random_device{}()) << 32;
  return status::ok();
}

expected<tensor_answer> rpc_client::infer_split(const std::string& model,
                                                std::span<const float> payload,
                                                std::uint32_t deadline_us) {
  if (!impl_->ucx_ep)
    return make_error(errc::invalid_argument, "infer_split: call open_split() first");
  const auto it = std::find(impl_->split_models.begin(), impl_->split_models.end(), model);
  if (it == impl_->split_models.end()) {
    return make_error(errc::invalid_argument, "infer_split: no tensor model '{}' on {}", model,
                      endpoint_);
  }
  split_header h{++impl_->next_call, std::uint32_t(it - impl_->split_models.begin())};
  std::byte header[12];
  std::memcpy(header, &h.call_id, 8);
  std::memcpy(header + 8, &h.model, 4);
  SPINDLE_TRY(
      impl_->ucx_ep->send_bulk(split_am_id, header, std::as_bytes(payload), impl_->timeout_ms));
  return guarded(endpoint_, [&]() -> expected<tensor_answer> {
    auto req = impl_->inference.inferSplitRequest();
    req.setModel(text(model));
    req.setCallId(h.call_id);
    req.setBytes(payload.size_bytes());
    req.setDeadlineUs(deadline_us);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

namespace {

// Keeps `in_flight` calls outstanding until `count` were answered: `one(i)`
// sends call i and resolves once its answer was handed on.
void run_chains(kj::WaitScope& ws, std::size_t count, std::size_t in_flight,
                const std::function<kj::Promise<void>(std::size_t)>& one) {
  std::size_t next = 0;
  std::function<kj::Promise<void>()> issue = [&]() -> kj::Promise<void> {
    if (next >= count) return kj::READY_NOW;
    return one(next++).then([&] { return issue(); });
  };
  const std::size_t chains_n = std::max<std::size_t>(1, in_flight);
  auto chains = kj::heapArrayBuilder<kj::Promise<void>>(chains_n);
  for (std::size_t c = 0; c < chains_n; ++c) chains.add(issue());
  kj::joinPromises(chains.finish()).wait(ws);
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
        done(i, Answer{rpc_status::unavailable, e.getDescription().cStr()},
             seconds_between(t0, std::chrono::steady_clock::now()));
      });
}

}  // namespace

status rpc_client::run_closed_loop(const std::vector<gnn_call>& calls, std::size_t in_flight,
                                   const gnn_callback& done) {
  return guarded(endpoint_, [&]() -> status {
    run_chains(impl_->ws(), calls.size(), in_flight, [&](std::size_t i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto req = impl_->inference.inferGnnRequest();
      detail::write(req.initRequest(), calls[i]);
      return answer_to<::Inference::InferGnnResults, gnn_answer>(req.send(), i, t0, done);
    });
    return status::ok();
  });
}

status rpc_client::run_closed_loop_rec(const std::function<const rec_call&(std::size_t)>& call_of,
                                       std::size_t calls, std::size_t in_flight,
                                       const rec_callback& done) {
  return guarded(endpoint_, [&]() -> status {
    run_chains(impl_->ws(), calls, in_flight, [&](std::size_t i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto req = impl_->inference.inferRecRequest();
      detail::write(req.initRequest(), call_of(i));
      return answer_to<::Inference::InferRecResults, rec_answer>(req.send(), i, t0, done);
    });
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

}  // namespace

status rpc_client::run_open_loop(const std::vector<gnn_call>& calls,
                                 const std::vector<double>& send_at_s, const gnn_callback& done) {
  if (send_at_s.size() != calls.size()) {
    return make_error(errc::invalid_argument, "open loop: {} send times for {} calls",
                      send_at_s.size(), calls.size());
  }
  return guarded(endpoint_, [&]() -> status {
    drive_open_loop(impl_->timer(), impl_->ws(), send_at_s, [&](std::size_t i, auto scheduled) {
      auto req = impl_->inference.inferGnnRequest();
      detail::write(req.initRequest(), calls[i]);
      return req.send().then(
          [&, i, scheduled](capnp::Response<::Inference::InferGnnResults> r) {
            done(i, detail::read(r.getReply()),
                 seconds_between(scheduled, std::chrono::steady_clock::now()));
          },
          [&, i, scheduled](kj::Exception&& e) {
            done(i, {rpc_status::unavailable, e.getDescription().cStr()},
                 seconds_between(scheduled, std::chrono::steady_clock::now()));
          });
    }, [&](std::size_t i, std::size_t n) { done(i, {rpc_status::overloaded, not_sent(n)}, 0.0); });
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
          auto req = impl_->inference.inferRecRequest();
          detail::write(req.initRequest(), call_of(i));
          return req.send().then(
              [&, i, scheduled](capnp::Response<::Inference::InferRecResults> r) {
                done(i, detail::read(r.getReply()),
                     seconds_between(scheduled, std::chrono::steady_clock::now()));
              },
              [&, i, scheduled](kj::Exception&& e) {
                done(i, {rpc_status::unavailable, e.getDescription().cStr()},
                     seconds_between(scheduled, std::chrono::steady_clock::now()));
              });
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

expected<admin_reply> rpc_client::stats(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.statsRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    a.json = str(r.getJson());
    return a;
  });
}

expected<admin_reply> rpc_client::list_models(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.listModelsRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    for (auto m : r.getModels()) {
      a.models.push_back({str(m.getName()), str(m.getKind()), str(m.getArch()), m.getInputWidth(),
                          m.getOutputWidth()});
      for (auto rows : m.getTableRows()) a.models.back().table_rows.push_back(rows);
      a.models.back().tables = std::uint32_t(a.models.back().table_rows.size());
    }
    return a;
  });
}

expected<admin_reply> rpc_client::get_tunables(const std::string& token, const std::string& model) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.getTunablesRequest();
    req.setToken(text(token));
    req.setModel(text(model));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    for (auto t : r.getTunables()) a.tunables.push_back({str(t.getName()), str(t.getValue())});
    return a;
  });
}

expected<admin_reply> rpc_client::set_tunable(const std::string& token, const std::string& model,
                                              const std::string& name, const std::string& value) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.setTunableRequest();
    req.setToken(text(token));
    req.setModel(text(model));
    req.setName(text(name));
    req.setValue(text(value));
    auto r = impl_->wait(req.send());
    return admin_of(r);
  });
}

expected<admin_reply> rpc_client::members(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.membersRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    a.json = str(r.getJson());
    return a;
  });
}

expected<admin_reply> rpc_client::load_model(const std::string& token, const std::string& name,
                                             const std::string& path) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.loadModelRequest();
    req.setToken(text(token));
    req.setName(text(name));
    req.setPath(text(path));
    auto r = impl_->wait(req.send());
    return admin_of(r);
  });
}

expected<admin_reply> rpc_client::unload_model(const std::string& token, const std::string& name) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.unloadModelRequest();
    req.setToken(text(token));
    req.setName(text(name));
    auto r = impl_->wait(req.send());
    return admin_of(r);
  });
}

}  // namespace spindle::transport::rpc
