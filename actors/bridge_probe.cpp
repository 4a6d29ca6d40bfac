#include "actors/bridge_probe.hpp"

#include <algorithm>
#include <caf/io/all.hpp>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "actors/remote_pipeline.hpp"
#include "actors/scheduler_config.hpp"
#include "actors/ucx_bridge.hpp"

namespace spindle::actors {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5))];
}

// Answers a batch with `out` floats per request, by CAF request or through the bridge.
caf::behavior echo(caf::event_based_actor*, int out) {
  auto answer = [out](const remote_batch& b) {
    serving::batch_result r;
    for (std::size_t i = 0; i < b.requests.size(); ++i) {
      r.outputs.emplace_back(std::size_t(out), float(i));
      r.errors.emplace_back();
    }
    return to_wire(r);
  };
  return {
      [=](run_atom, const remote_batch& b) { return answer(b); },
      [=](bridge_call_atom, const caf::message& m) {
        return bridge_reply{caf::make_message(answer(m.get_as<remote_batch>(1)))};
      },
  };
}

struct actor_process {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  bridge_handle bridge;
  explicit actor_process(int rank) {
    cfg.load<caf::io::middleman>();
    actors::configure_scheduler(cfg);
    add_bridge_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    bridge_options o;
    o.rank = rank;
    bridge = spawn_bridge(*sys, o).value();
  }
  ~actor_process() { caf::anon_send_exit(bridge.actor, caf::exit_reason::user_shutdown); }
};

// Round trips of `msg` sent by `self` to `to`, one at a time.
template <class Send>
round_trip measure(int iterations, Send send) {
  std::vector<double> lat;
  lat.reserve(std::size_t(iterations));
  for (int i = 0; i < iterations / 10; ++i) send();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    const auto s = std::chrono::steady_clock::now();
    send();
    lat.push_back(seconds_since(s) * 1e6);
  }
  const double wall = seconds_since(t0);
  return {percentile(lat, 0.5), percentile(lat, 0.99), iterations / wall, 0};
}

}  // namespace

expected<bridge_probe_result> probe_bridge(int iterations, int batch, int out) {
  actor_process a(0), b(1);
  auto target = b.sys->spawn(echo, out);
  auto port = b.sys->middleman().publish(target, 0, "127.0.0.1");
  if (!port) return make_error(errc::io_error, "publish on loopback: {}", to_string(port.error()));
  auto remote = a.sys->middleman().remote_actor("127.0.0.1", *port);
  if (!remote) return make_error(errc::unavailable, "remote_actor: {}", to_string(remote.error()));
  caf::anon_send(a.bridge.actor, peer_atom::value, 1, b.bridge.address);
  caf::anon_send(b.bridge.actor, peer_atom::value, 0, a.bridge.address);
  caf::anon_send(b.bridge.actor, register_atom::value, std::string(pipeline_target), target);
  auto local = a.sys->spawn(echo, out);

  remote_batch job;
  for (int i = 0; i < batch; ++i) job.requests.push_back({{i}, std::uint64_t(i)});
  caf::scoped_actor self{*a.sys};
  std::string failure;
  auto on_error = [&](caf::error& e) {
    if (failure.empty()) failure = error_text(e);
  };
  auto ask = [&](const caf::actor& to) {
    return [&, to] {
      self->request(to, std::chrono::seconds(10), run_atom::value, job)
          .receive([](const remote_result&) {}, on_error);
    };
  };
  auto via_bridge = [&] {
    self->request(a.bridge.actor, std::chrono::seconds(10), forward_atom::value, 1,
                  std::string(pipeline_target), caf::make_message(run_atom::value, job))
        .receive([](const remote_result&) {}, on_error);
  };
  // Throughput with `window` batches in flight (as a batcher keeps several pipelines busy).
  const int window = 16;
  auto pipelined = [&](auto send_one, int n) {
    const auto t0 = std::chrono::steady_clock::now();
    int received = 0;
    for (int i = 0; i < window; ++i) send_one();
    for (int sent = window; received < n; ++received) {
      self->receive([](const remote_result&) {}, on_error);
      if (sent++ < n) send_one();
    }
    return n / seconds_since(t0);
  };
  auto send_local = [&] { self->send(local, run_atom::value, job); };
  auto send_bridge = [&] {
    self->send(a.bridge.actor, forward_atom::value, 1, std::string(pipeline_target),
               caf::make_message(run_atom::value, job));
  };
  auto send_remote = [&] { self->send(*remote, run_atom::value, job); };
  const double tp_local = pipelined(send_local, iterations);
  const double tp_bridge = pipelined(send_bridge, iterations);
  const double tp_remote = pipelined(send_remote, iterations / 2);
  auto in_process = measure(iterations, ask(local));
  auto bridged = measure(iterations, via_bridge);
  auto middleman = measure(iterations / 4, ask(*remote));
  in_process.in_flight_per_s = tp_local;
  bridged.in_flight_per_s = tp_bridge;
  middleman.in_flight_per_s = tp_remote;
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(local, caf::exit_reason::user_shutdown);
  if (!failure.empty()) return make_error(errc::unavailable, "bridge probe: {}", failure);
  return bridge_probe_result{in_process, bridged, middleman};
}

}  // namespace spindle::actors
