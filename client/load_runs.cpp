#include "client/load_runs.hpp"

#include <chrono>
#include <mutex>

namespace spindle::client {
namespace {

namespace rpc = transport::rpc;
using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

// The run's wall time and this process's CPU over it, into its outcome.
void stop(const run_clock& clock, load_outcome& o) {
  o.wall_s = clock.wall_s();
  o.cpu_s = clock.cpu_s();
}

std::size_t in_flight_of(const load_settings& s) { return std::size_t(std::max(1, s.clients)); }

auto rec_call_of(const std::vector<rpc::rec_call>& calls) {
  return [&calls](std::size_t i) -> const rpc::rec_call& { return calls[i % calls.size()]; };
}

}  // namespace

status warm_up_rec(rpc::rpc_client& client, const std::vector<rpc::rec_call>& calls,
                   const load_settings& s) {
  return client.run_closed_loop_rec(rec_call_of(calls), s.warmup, in_flight_of(s),
                                    [](auto, auto&, double) {});
}

window_runner rec_runner(rpc::rpc_client& client, const std::vector<rpc::rec_call>& calls,
                         const load_settings& s) {
  return [&client, &calls, requests = s.requests](
             std::size_t in_flight, const std::vector<double>& at, const answer_fn& done) {
    auto each = [&](std::size_t, const rpc::rec_answer& x, double sec) {
      done(x.status == rpc::rpc_status::ok, sec);
    };
    return at.empty() ? client.run_closed_loop_rec(rec_call_of(calls), requests, in_flight, each)
                      : client.run_open_loop_rec(rec_call_of(calls), at, each);
  };
}

expected<load_outcome> measure_rec(rpc::rpc_client& client, const std::vector<rpc::rec_call>& calls,
                                   const load_settings& s) {
  load_outcome o{load_report(s.requests), s.requests};
  auto done = [&](std::size_t i, const rpc::rec_answer& x, double sec) {
    o.report.record(i, x, sec);
  };
  o.send_at = poisson_schedule(s.requests, s.rate, s.seed);
  const run_clock clock;
  if (s.rate > 0) {
    SPINDLE_TRY(client.run_open_loop_rec(rec_call_of(calls), o.send_at, done));
  } else {
    SPINDLE_TRY(client.run_closed_loop_rec(rec_call_of(calls), s.requests, in_flight_of(s), done));
  }
  stop(clock, o);
  o.samples = calls.front().batch;
  return o;
}

status warm_up_gnn(rpc::rpc_client& client, const door_list* several,
                   const std::vector<rpc::gnn_call>& calls, const load_settings& s) {
  if (several)
    return spread_calls(*several, calls, s.clients, {}, [](auto, auto&, double) {}).error_or_ok();
  return client.run_closed_loop(calls, std::max(1, s.clients), [](auto, auto&, double) {});
}

expected<load_outcome> measure_gnn(rpc::rpc_client& client, const door_list* several,
                                   const std::vector<rpc::gnn_call>& calls,
                                   const load_settings& s) {
  load_outcome o{load_report(calls.size()), calls.size()};
  auto done = [&](std::size_t i, const rpc::gnn_answer& x, double sec) {
    o.report.record(i, x, sec);
  };
  o.send_at = poisson_schedule(calls.size(), s.rate, s.seed);
  const run_clock clock;
  if (several) {
    SPINDLE_ASSIGN_OR_RETURN(o.per_door, spread_calls(*several, calls, s.clients, o.send_at, done));
  } else if (s.rate > 0) {
    SPINDLE_TRY(client.run_open_loop(calls, o.send_at, done));
  } else {
    SPINDLE_TRY(client.run_closed_loop(calls, std::max(1, s.clients), done));
  }
  stop(clock, o);
  return o;
}

status warm_up_door(const door_connect& connect, const load_settings& s, const door_infer& infer) {
  return run_door_loop(connect, s.warmup, in_flight_of(s), {},
                       [&](auto& client, std::size_t i, auto) { (void)infer(client, i); });
}

window_runner door_runner(const door_connect& connect, const load_settings& s,
                          const door_infer& infer) {
  return [&connect, &infer, s](std::size_t in_flight, const std::vector<double>& at,
                               const answer_fn& done) {
    return run_door_loop(connect, s.requests, at.empty() ? in_flight : in_flight_of(s), at,
                         [&](auto& client, std::size_t i, auto due) {
                           const auto x = infer(client, s.warmup + i);
                           done(x.status == rpc::rpc_status::ok, seconds_since(due));
                         });
  };
}

expected<load_outcome> measure_door(const door_connect& connect, const load_settings& s,
                                    const door_infer& infer, std::uint32_t samples) {
  load_outcome o{load_report(s.requests), s.requests};
  std::mutex mu;
  o.send_at = poisson_schedule(s.requests, s.rate, s.seed);
  // The clocks start once the connections are open: the run measures calls,
  // not connection set-up (tens of ms for a pool of gRPC connections).
  run_clock clock;
  auto connected = [&] { clock.restart(); };
  SPINDLE_TRY(run_door_loop(
      connect, s.requests, in_flight_of(s), o.send_at,
      [&](auto& client, std::size_t i, auto due) {
        const auto x = infer(client, s.warmup + i);
        const double sec = seconds_since(due);
        std::lock_guard lock(mu);
        o.report.record(i, x, sec);
      },
      connected));
  stop(clock, o);
  o.samples = samples;
  return o;
}

}  // namespace spindle::client
