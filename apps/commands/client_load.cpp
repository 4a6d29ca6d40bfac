#include "apps/commands/client_load.hpp"

#include <charconv>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <ranges>
#include <thread>

#include "apps/commands/command.hpp"
#include "client/door_load.hpp"
#include "client/latency_files.hpp"
#include "client/load_sweep.hpp"
#include "client/rec_load.hpp"
#include "core/gnuplot.hpp"
#include "graph/dataset.hpp"
#include "serving/gnn_pipeline.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::apps {
namespace {

namespace rpc = transport::rpc;

struct load_args {
  std::size_t requests = 1000, warmup = 100;
  int clients = 8;
  double rate = 0;
  std::string seeds = "", csv, plot, log;
  std::string concurrency_range, rate_range;  // sweep mode (load_sweep.hpp)
  std::uint64_t seed = 1;
  std::uint32_t deadline_us = 0;
  bool json = false;
  bool reproducible = false;   // request i carries sampler seed i + 1
  client::rec_load_options rec;        // recommendation models: the batches sent
  std::string door = "capnp";  // or a KServe door: http, grpc (door_load.hpp)
};

// "uniform:N", "degree:DATASET_DIR" or a trace file of ids (one per line).
expected<std::vector<std::int64_t>> draw_seeds(const std::string& spec, std::size_t n,
                                               std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out;
  if (spec.starts_with("uniform:")) {
    const auto nodes = std::stoll(spec.substr(8));
    if (nodes <= 0)
      return make_error(errc::invalid_argument, "--seeds {}: node count must be > 0", spec);
    std::uniform_int_distribution<std::int64_t> pick(0, nodes - 1);
    for (std::size_t i = 0; i < n; ++i) out.push_back(pick(rng));
  } else if (spec.starts_with("degree:")) {
    SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(spec.substr(7)));
    for (const auto& r : serving::degree_requests(ds, n)) out.push_back(r.seeds[0]);
  } else {
    std::ifstream in(spec);
    if (!in)
      return make_error(errc::not_found,
                        "--seeds {}: expected uniform:N, degree:DIR or a trace file", spec);
    std::vector<std::int64_t> trace;
    for (std::int64_t v; in >> v;) trace.push_back(v);
    if (trace.empty()) return make_error(errc::invalid_argument, "{}: no node ids", spec);
    for (std::size_t i = 0; i < n; ++i) out.push_back(trace[i % trace.size()]);
  }
  return out;
}

// Several doors: call i goes to the doors in turn (round-robin over those that
// accepted a connection; a refused one's share goes to the others), each door
// driven by its own client on its own thread (a client belongs to one thread),
// with the in-flight window split between them. `done` is called under a lock
// with the call's index in `calls`; returns the calls each door answered.
expected<std::map<std::string, std::size_t>> spread_calls(const client_args& c,
                                                          const std::vector<rpc::gnn_call>& calls,
                                                          const load_args& a,
                                                          const std::vector<double>& send_at,
                                                          const rpc::gnn_callback& done) {
  std::vector<std::string> live;
  for (const auto& e : endpoints_of(c)) {
    auto client = rpc::rpc_client::connect(e, c.timeout_ms);
    if (client) {
      live.push_back(e);
    } else {
      fmt::print(stderr, "spindle: {}: {}; its calls go to the other doors\n", e,
                 client.error().message());
    }
  }
  if (live.empty())
    return make_error(errc::unavailable, "--connect {}: no door answered", c.connect);
  std::mutex mu;
  std::map<std::string, std::size_t> answered;
  std::vector<status> results(live.size());
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < live.size(); ++d) {
    threads.emplace_back([&, d] {
      std::vector<std::size_t> mine;
      for (std::size_t i = d; i < calls.size(); i += live.size()) mine.push_back(i);
      std::vector<rpc::gnn_call> part;
      std::vector<double> at;
      for (auto i : mine) {
        part.push_back(calls[i]);
        if (!send_at.empty()) at.push_back(send_at[i]);
      }
      auto client = rpc::rpc_client::connect(live[d], c.timeout_ms);
      if (!client) {
        results[d] = client.error();
        return;
      }
      auto local = [&](std::size_t k, const rpc::gnn_answer& r, double s) {
        std::lock_guard lock(mu);
        answered[live[d]] += r.status == rpc::rpc_status::ok;
        done(mine[k], r, s);
      };
      const int window = std::max(1, a.clients / int(live.size()));
      results[d] = send_at.empty() ? (*client)->run_closed_loop(part, std::size_t(window), local)
                                   : (*client)->run_open_loop(part, at, local);
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t d = 0; d < live.size(); ++d)
    if (!results[d]) fmt::print(stderr, "spindle: {}: {}\n", live[d], results[d].to_string());
  return answered;
}

// What a load measured, for either kind of model: latencies of ok answers,
// answers by status, how fast refusals came, and each request's outcome.
struct load_report {
  std::vector<double> lat_ms;
  std::map<std::string, std::size_t> by_status;
  std::map<std::string, std::vector<double>> refused_ms;
  std::string first_error;
  std::vector<std::pair<double, rpc::rpc_status>> per_request;
  explicit load_report(std::size_t n) : per_request(n) {}
  template <class Answer>
  void record(std::size_t i, const Answer& r, double s) {
    per_request[i] = {s * 1e3, r.status};
    // Calls the client dropped (rate over capacity) are counted apart from refusals.
    const std::string st = r.message.rfind(rpc::kNotSent, 0) == 0
                               ? "not sent (client limit)"
                               : std::string(rpc::to_string(r.status));
    ++by_status[st];
    if (r.status == rpc::rpc_status::ok) {
      lat_ms.push_back(s * 1e3);
      return;
    }
    refused_ms[st].push_back(s * 1e3);
    if (first_error.empty()) first_error = st + ": " + r.message;
  }
};

// Exponential gaps at `rate` per second: each request's scheduled send time.
std::vector<double> poisson_schedule(std::size_t n, double rate, std::uint64_t seed) {
  std::vector<double> at;
  if (rate <= 0) return at;
  std::mt19937_64 rng(seed + 1);
  std::exponential_distribution<double> gap(rate);
  at.resize(n);
  double t = 0;
  for (auto& x : at) x = t += gap(rng);
  return at;
}

status print_report(const client_args& c, const load_args& a, const load_report& r,
                    std::size_t requests, double wall, const std::vector<double>& send_at,
                    const std::map<std::string, std::size_t>& per_door, std::uint32_t samples) {
  if (!a.log.empty()) SPINDLE_TRY(client::write_request_log(a.log, r.per_request, send_at));
  const std::string mode = a.rate > 0 ? fmt::format("open loop, Poisson {:.0f}/s", a.rate)
                                      : fmt::format("closed loop, {} in flight", a.clients);
  if (!a.csv.empty() || !a.plot.empty())
    SPINDLE_TRY(client::write_cdf(
        r.lat_ms, a.csv, a.plot,
        fmt::format("spindle client load: model {}, {}, {} requests", c.model, mode, requests)));
  const auto& lat_ms = r.lat_ms;
  const double tput = double(lat_ms.size()) / wall;
  if (a.json) {
    nlohmann::json j = {{"requests", requests},
                        {"answered_ok", lat_ms.size()},
                        {"status", r.by_status},
                        {"throughput_rps", tput},
                        {"wall_s", wall},
                        {"mode", a.rate > 0 ? "open" : "closed"},
                        {"latency_ms",
                         {{"p50", pct(lat_ms, 0.5)},
                          {"p90", pct(lat_ms, 0.9)},
                          {"p99", pct(lat_ms, 0.99)},
                          {"p999", pct(lat_ms, 0.999)}}}};
    if (samples > 0) {
      j["samples_per_call"] = samples;
      j["samples_per_s"] = tput * samples;
    }
    for (const auto& [st, v] : r.refused_ms)
      j["refused_latency_ms"][st] = {{"p50", pct(v, 0.5)}, {"p99", pct(v, 0.99)}};
    if (!r.first_error.empty()) j["first_error"] = r.first_error;
    if (!per_door.empty()) j["answered_ok_by_door"] = per_door;
    fmt::print("{}\n", j.dump(2));
    return status::ok();
  }
  fmt::print(
      "{} requests ({}), {:.2f} s: {:.0f} req/s ok{}\n", requests,
      a.rate > 0 ? mode : fmt::format("closed loop, {} clients", a.clients), wall, tput,
      samples > 0 ? fmt::format(" ({:.0f} samples/s, {} per call)", tput * samples, samples) : "");
  fmt::print("latency p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  p999 {:.3f} ms\n",
             pct(lat_ms, 0.5), pct(lat_ms, 0.9), pct(lat_ms, 0.99), pct(lat_ms, 0.999));
  for (const auto& [s, n] : r.by_status) {
    if (auto it = r.refused_ms.find(s); it != r.refused_ms.end()) {
      fmt::print("  {}: {} (answered in p50 {:.3f} ms, p99 {:.3f} ms)\n", s, n,
                 pct(it->second, 0.5), pct(it->second, 0.99));
    } else {
      fmt::print("  {}: {}\n", s, n);
    }
  }
  if (!r.first_error.empty()) fmt::print("first error: {}\n", r.first_error);
  for (const auto& [door, n] : per_door) fmt::print("  answered ok by {}: {}\n", door, n);
  return status::ok();
}

bool sweeping(const load_args& a) { return !a.concurrency_range.empty() || !a.rate_range.empty(); }

// --concurrency-range / --rate-range: every level through `run`, then the table and plot.
status sweep(const load_args& a, const client::window_runner& run, std::size_t calls_per_window) {
  if (!a.concurrency_range.empty() && !a.rate_range.empty())
    return make_error(errc::invalid_argument,
                      "load: give --concurrency-range or --rate-range, not both");
  const bool open_loop = !a.rate_range.empty();
  SPINDLE_ASSIGN_OR_RETURN(auto levels,
                           client::parse_range(open_loop ? a.rate_range : a.concurrency_range,
                                       open_loop ? "--rate-range" : "--concurrency-range"));
  SPINDLE_ASSIGN_OR_RETURN(auto rows, client::run_sweep(run, calls_per_window, open_loop, levels, a.seed));
  client::print_sweep(rows, open_loop, a.json);
  if (!a.plot.empty()) SPINDLE_TRY(client::plot_sweep(rows, open_loop, a.plot));
  return status::ok();
}

// A recommendation model under load: batches from its description (or a file),
// sent in turn, closed or open loop (or swept level by level), on one door.
status run_rec_load(const client_args& c, const load_args& a, rpc::rpc_client& client,
                    const rpc::model_info& m) {
  if (endpoints_of(c).size() > 1)
    return make_error(errc::invalid_argument,
                      "load: recommendation model '{}': one door per run (several doors drive "
                      "GNN models)",
                      m.name);
  auto o = a.rec;
  o.seed = a.seed;
  SPINDLE_ASSIGN_OR_RETURN(auto calls, client::rec_load_calls(m, m.name, o));
  for (auto& x : calls) x.deadline_us = a.deadline_us;
  auto call_of = [&](std::size_t i) -> const rpc::rec_call& { return calls[i % calls.size()]; };
  SPINDLE_TRY(client.run_closed_loop_rec(call_of, a.warmup, std::size_t(std::max(1, a.clients)),
                                         [](auto, auto&, double) {}));
  if (sweeping(a))
    return sweep(
        a,
        [&](std::size_t in_flight, const std::vector<double>& at, const client::answer_fn& done) {
          auto each = [&](std::size_t, const rpc::rec_answer& x, double s) {
            done(x.status == rpc::rpc_status::ok, s);
          };
          return at.empty() ? client.run_closed_loop_rec(call_of, a.requests, in_flight, each)
                            : client.run_open_loop_rec(call_of, at, each);
        },
        a.requests);
  load_report r(a.requests);
  auto done = [&](std::size_t i, const rpc::rec_answer& x, double s) { r.record(i, x, s); };
  const auto send_at = poisson_schedule(a.requests, a.rate, a.seed);
  const auto t0 = std::chrono::steady_clock::now();
  if (a.rate > 0) {
    SPINDLE_TRY(client.run_open_loop_rec(call_of, send_at, done));
  } else {
    SPINDLE_TRY(
        client.run_closed_loop_rec(call_of, a.requests, std::size_t(std::max(1, a.clients)), done));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return print_report(c, a, r, a.requests, wall, send_at, {}, calls.front().batch);
}

// Warm-up, then the measured calls, on a KServe door: `infer(client, i)`
// answers call i (warm-up calls first, then the measured ones).
template <class Infer>
status drive_door(const client_args& c, const load_args& a, const client::door_connect& connect,
                  std::uint32_t samples, const Infer& infer) {
  const auto threads = std::size_t(std::max(1, a.clients));
  SPINDLE_TRY(client::run_door_loop(connect, a.warmup, threads, {},
                            [&](auto& client, std::size_t i, auto) { (void)infer(client, i); }));
  if (sweeping(a))  // closed loop: a connection per call in flight; open: the --clients pool
    return sweep(
        a,
        [&](std::size_t in_flight, const std::vector<double>& at, const client::answer_fn& done) {
          return client::run_door_loop(
              connect, a.requests, at.empty() ? in_flight : threads, at,
              [&](auto& client, std::size_t i, auto due) {
                const auto x = infer(client, a.warmup + i);
                done(x.status == rpc::rpc_status::ok,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - due).count());
              });
        },
        a.requests);
  load_report r(a.requests);
  std::mutex mu;
  const auto send_at = poisson_schedule(a.requests, a.rate, a.seed);
  const auto t0 = std::chrono::steady_clock::now();
  SPINDLE_TRY(client::run_door_loop(
      connect, a.requests, threads, send_at, [&](auto& client, std::size_t i, auto due) {
        const auto x = infer(client, a.warmup + i);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - due).count();
        std::lock_guard lock(mu);
        r.record(i, x, s);
      }));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return print_report(c, a, r, a.requests, wall, send_at, {}, samples);
}

// `client load --door http|grpc`: either model kind, described by the door's
// model configuration; one door and one level per run.
status run_kserve_load(const client_args& c, const load_args& a) {
  if (endpoints_of(c).size() > 1)
    return make_error(errc::invalid_argument,
                      "load --door {}: one door per run (several doors: the Cap'n Proto door)",
                      a.door);
  if (c.model.empty())
    return make_error(errc::invalid_argument, "load --door {}: give --model NAME", a.door);
  SPINDLE_ASSIGN_OR_RETURN(auto connect, client::door_connector(a.door, c.connect, c.timeout_ms));
  SPINDLE_ASSIGN_OR_RETURN(auto probe, connect());
  SPINDLE_ASSIGN_OR_RETURN(auto m, probe->describe(c.model));
  if (m.kind != "gnn") {
    auto o = a.rec;
    o.seed = a.seed;
    SPINDLE_ASSIGN_OR_RETURN(auto calls, client::rec_load_calls(m, m.name, o));
    for (auto& x : calls) x.deadline_us = a.deadline_us;
    return drive_door(c, a, connect, calls.front().batch, [&](auto& client, std::size_t i) {
      return client.infer_rec(calls[i % calls.size()]);
    });
  }
  if (a.seeds.empty())
    return make_error(errc::invalid_argument,
                      "load: --seeds uniform:N | degree:DIR | FILE is required for a GNN model "
                      "('{}')",
                      m.name);
  SPINDLE_ASSIGN_OR_RETURN(auto seeds, draw_seeds(a.seeds, a.requests + a.warmup, a.seed));
  std::vector<rpc::gnn_call> calls;
  for (std::size_t i = 0; i < seeds.size(); ++i)
    calls.push_back({c.model, {seeds[i]}, a.reproducible ? i + 1 : 0, a.deadline_us});
  return drive_door(c, a, connect, 0,
                    [&](auto& client, std::size_t i) { return client.infer_gnn(calls[i]); });
}

status run_load(const client_args& c, const load_args& a) {
  if (a.door != "capnp") return run_kserve_load(c, a);
  const bool several = endpoints_of(c).size() > 1;
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  if (a.seeds.empty()) {  // a recommendation model needs none: its description says what to send
    SPINDLE_ASSIGN_OR_RETURN(auto models, client->models());
    const rpc::model_info* m = nullptr;
    for (const auto& x : models)
      if (x.name == c.model || (c.model.empty() && models.size() == 1)) m = &x;
    if (m && m->kind != "gnn") return run_rec_load(c, a, *client, *m);
    return make_error(errc::invalid_argument,
                      "load: --seeds uniform:N | degree:DIR | FILE is required for a GNN model{}",
                      m ? fmt::format(" ('{}')", m->name) : std::string());
  }
  if (several && (!a.concurrency_range.empty() || !a.rate_range.empty()))
    return make_error(errc::invalid_argument,
                      "load: a sweep drives one door; give one --connect HOST:PORT");
  SPINDLE_ASSIGN_OR_RETURN(auto seeds, draw_seeds(a.seeds, a.requests + a.warmup, a.seed));
  std::vector<rpc::gnn_call> calls;
  for (std::size_t i = 0; i < seeds.size(); ++i)
    calls.push_back({c.model, {seeds[i]}, a.reproducible ? i + 1 : 0, a.deadline_us});
  std::vector<rpc::gnn_call> warm(calls.begin(), calls.begin() + a.warmup),
      measured(calls.begin() + a.warmup, calls.end());
  if (several) {
    SPINDLE_TRY(spread_calls(c, warm, a, {}, [](auto, auto&, double) {}).error_or_ok());
  } else {
    SPINDLE_TRY(client->run_closed_loop(warm, std::max(1, a.clients), [](auto, auto&, double) {}));
  }
  if (sweeping(a)) return sweep(a, client::capnp_gnn_runner(*client, measured), measured.size());
  load_report r(measured.size());
  auto done = [&](std::size_t i, const rpc::gnn_answer& x, double s) { r.record(i, x, s); };
  const auto send_at = poisson_schedule(measured.size(), a.rate, a.seed);
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, std::size_t> per_door;
  if (several) {
    SPINDLE_ASSIGN_OR_RETURN(per_door, spread_calls(c, measured, a, send_at, done));
  } else if (a.rate > 0) {
    SPINDLE_TRY(client->run_open_loop(measured, send_at, done));
  } else {
    SPINDLE_TRY(client->run_closed_loop(measured, std::max(1, a.clients), done));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return print_report(c, a, r, measured.size(), wall, send_at, per_door, 0);
}

}  // namespace

void add_load_command(CLI::App& client, std::shared_ptr<client_args> c) {
  auto* load = client.add_subcommand("load", "Load generator with a latency report");
  auto la = std::make_shared<load_args>();
  load->add_option("--requests", la->requests, "Measured requests")->capture_default_str();
  load->add_option("--warmup", la->warmup, "Requests before measuring")->capture_default_str();
  load->add_option("--clients", la->clients, "Closed loop: calls in flight")->capture_default_str();
  load->add_option("--door", la->door,
                   "capnp (default), or a KServe door: http (binary tensors) | grpc; --connect "
                   "then names that door, and --clients is the connection pool (one call in "
                   "flight per connection, open loop too)")
      ->check(CLI::IsMember({"capnp", "http", "grpc"}))
      ->capture_default_str();
  load->add_option("--rate", la->rate,
                   "Open loop: Poisson arrivals per second (overrides --clients)");
  load->add_option("--seeds", la->seeds,
                   "GNN models: uniform:N | degree:DATASET_DIR | trace FILE (a recommendation "
                   "model needs none: its batches are drawn from its description)");
  load->add_option("--batch", la->rec.batch, "Recommendation models: samples per call")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  load->add_option(
          "--zipf", la->rec.zipf,
          "Recommendation models: skew of each table's keys (P(k) ~ 1/(k+1)^s; 0: uniform)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  load->add_option("--lookups", la->rec.lookups, "Recommendation models: keys per sample per table")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  load->add_option("--distinct-batches", la->rec.distinct,
                   "Recommendation models: batches drawn, then sent in turn (more: fresher keys)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  load->add_option("--input", la->rec.input,
                   "Recommendation models: send this JSON batch (`client rec --input`'s form) "
                   "instead of drawn ones");
  load->add_option("--seed", la->seed, "Random seed")->capture_default_str();
  load->add_option("--deadline-us", la->deadline_us, "Per-request deadline (0: none)")
      ->capture_default_str();
  load->add_option("--csv", la->csv, "Write the latency CDF as CSV");
  load->add_option("--plot", la->plot,
                   "Write the latency CDF as a PNG (gnuplot); in a sweep, p99 against throughput");
  load->add_option("--concurrency-range", la->concurrency_range,
                   "Sweep closed-loop levels START:END:STEP calls in flight, each measured in "
                   "windows of --requests until two agree within 10% (at most 4)");
  load->add_option("--rate-range", la->rate_range,
                   "Sweep open-loop Poisson rates START:END:STEP per second, as above");
  load->add_option("--log", la->log,
                   "Write every measured request as CSV: index, sent_s (scheduled), latency_ms, "
                   "status (to see when slow or refused answers happened)");
  load->add_flag("--json", la->json, "Print the report as JSON");
  load->add_flag("--reproducible", la->reproducible,
                 "Give request i sampler seed i + 1 (sampled on its own, fixed answer); by "
                 "default requests carry none and share their batch's sampled graph");
  on_run(load, [c, la] { return run_load(*c, *la); });
}

}  // namespace spindle::apps
