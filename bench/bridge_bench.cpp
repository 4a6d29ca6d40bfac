// The cost of one batch message and its result between two actor systems
// (DESIGN.md "Planes"): through the UCX bridge (active messages, CAF's binary
// serializer) versus CAF's middleman (BASP over loopback TCP), with an
// in-process CAF request as the same-run baseline. The payload is a batch of
// `batch` single-seed requests and a reply of `batch` x `out` floats, as a
// batcher sends to a pipeline in another process.
//   bridge_bench [iterations=20000] [batch=16] [out=7]
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cstdio>
#include <string>

#include "actors/scheduler_config.hpp"
#include "actors/remote_pipeline.hpp"
#include "actors/ucx_bridge.hpp"
#include "bench/bench_util.hpp"

namespace spindle {
namespace {

using namespace actors;

// Answers a batch with `out` floats per request, by CAF request or through the bridge.
caf::behavior echo(caf::event_based_actor*, int out) {
  auto answer = [out](const remote_batch& b) {
    sched::batch_result r;
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

struct system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  bridge_handle bridge;
  explicit system(int rank) {
    cfg.load<caf::io::middleman>();
    actors::configure_scheduler(cfg);
    add_bridge_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    bridge_options o;
    o.rank = rank;
    bridge = spawn_bridge(*sys, o).value();
  }
  ~system() { caf::anon_send_exit(bridge.actor, caf::exit_reason::user_shutdown); }
};

struct figure {
  double p50_us, p99_us, per_s;
};

// Round trips of `msg` sent by `self` to `to`, one at a time.
template <class Send>
figure measure(int iterations, Send send) {
  std::vector<double> lat;
  lat.reserve(std::size_t(iterations));
  for (int i = 0; i < iterations / 10; ++i) send();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    const auto s = std::chrono::steady_clock::now();
    send();
    lat.push_back(bench::seconds_since(s) * 1e6);
  }
  const double wall = bench::seconds_since(t0);
  return {bench::percentile(lat, 0.5), bench::percentile(lat, 0.99), iterations / wall};
}

int run(int iterations, int batch, int out) {
  system a(0), b(1);
  auto target = b.sys->spawn(echo, out);
  auto port = b.sys->middleman().publish(target, 0, "127.0.0.1");
  if (!port) return std::fprintf(stderr, "publish failed\n"), 1;
  auto remote = a.sys->middleman().remote_actor("127.0.0.1", *port);
  if (!remote) return std::fprintf(stderr, "remote_actor failed\n"), 1;
  caf::anon_send(a.bridge.actor, peer_atom::value, 1, b.bridge.address);
  caf::anon_send(b.bridge.actor, peer_atom::value, 0, a.bridge.address);
  caf::anon_send(b.bridge.actor, register_atom::value, std::string(pipeline_target), target);
  auto local = a.sys->spawn(echo, out);

  remote_batch job;
  for (int i = 0; i < batch; ++i) job.requests.push_back({{i}, std::uint64_t(i)});
  caf::scoped_actor self{*a.sys};
  bool ok = true;
  auto on_error = [&](caf::error& e) {
    ok = false;
    std::fprintf(stderr, "error: %s\n", to_string(e).c_str());
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
    return n / bench::seconds_since(t0);
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
  const auto in_process = measure(iterations, ask(local));
  const auto bridged = measure(iterations, via_bridge);
  const auto middleman = measure(iterations / 4, ask(*remote));
  if (!ok) return 1;
  std::printf("batch of %d requests, reply %d x %d floats, one round trip at a time\n", batch,
              batch, out);
  std::printf("%-34s %8s %8s %9s %14s %8s\n", "path", "p50 us", "p99 us", "1-at-a-time",
              "16 in flight/s", "vs CAF");
  auto row = [&](const char* name, const figure& f, double tp) {
    std::printf("%-34s %8.1f %8.1f %9.0f %14.0f %7.2fx\n", name, f.p50_us, f.p99_us, f.per_s, tp,
                tp / tp_remote);
  };
  row("in-process CAF request (baseline)", in_process, tp_local);
  row("UCX bridge (active messages)", bridged, tp_bridge);
  row("CAF middleman (BASP over TCP)", middleman, tp_remote);
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(local, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace
}  // namespace spindle

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::stoi(argv[1]) : 20000;
  const int batch = argc > 2 ? std::stoi(argv[2]) : 16;
  const int out = argc > 3 ? std::stoi(argv[3]) : 7;
  return spindle::run(iterations, batch, out);
}
