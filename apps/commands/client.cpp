// `spindle client --connect HOST:PORT ...`: the front door from the command line.
//   infer   one GNN request, printed for people (or --json for scripts)
//   rec     one recommendation (DLRM) request: a batch from a JSON file, or one
//           sample from --dense and --sparse
//   load    the load generator: closed loop (--clients C) or open-loop Poisson
//           (--rate R); seeds uniform over N nodes, by a dataset's out-degree, or
//           from a trace file; warm-up; report with throughput, p50/p90/p99/p999,
//           errors by status; latency CDF as CSV and a gnuplot PNG
//   admin   one Admin call (stats, models, tunables, set, members, load, unload)
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
#include "apps/commands/door_load.hpp"
#include "apps/commands/load_sweep.hpp"
#include "apps/commands/members_table.hpp"
#include "apps/commands/rec_load.hpp"
#include "core/gnuplot.hpp"
#include "graph/dataset.hpp"
#include "sched/serving/gnn_pipeline.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::apps {
namespace {

namespace rpc = transport::rpc;

struct client_args {
  std::string connect = "127.0.0.1:7400", model, token, token_file;
  int timeout_ms = 30000;
};

// --connect A,B,C: the doors of several nodes (a cluster's ranks).
std::vector<std::string> endpoints_of(const client_args& c) {
  return rpc::rpc_client::split_endpoints(c.connect);
}

// The first door that accepts, moving on from a refused or dead one (named on stderr).
expected<std::unique_ptr<rpc::rpc_client>> open(const client_args& c) {
  std::vector<std::string> skipped;
  auto client = rpc::rpc_client::connect_any(c.connect, c.timeout_ms, &skipped);
  if (client)
    for (const auto& why : skipped) fmt::print(stderr, "spindle: {}; tried the next door\n", why);
  return client;
}

expected<std::string> token_of(const client_args& c) {
  if (!c.token.empty()) return c.token;
  if (c.token_file.empty())
    return make_error(errc::invalid_argument, "admin: give --token or --token-file");
  std::ifstream in(c.token_file);
  std::string t;
  if (!in || !std::getline(in, t))
    return make_error(errc::not_found, "{}: cannot read the admin token", c.token_file);
  return t;
}

struct infer_args {
  std::vector<std::int64_t> seeds;
  std::vector<std::string> ids;  // input ids, resolved by the server
  std::uint64_t sampler_seed = 0;
  std::uint32_t deadline_us = 0;
  bool json = false;
};

status run_infer(const client_args& c, const infer_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto client, open(c));
  if (a.seeds.empty() == a.ids.empty())
    return make_error(errc::invalid_argument, "infer: give --seeds (rows) or --ids (input ids)");
  SPINDLE_ASSIGN_OR_RETURN(
      auto r, client->infer_gnn({c.model, a.seeds, a.sampler_seed, a.deadline_us, a.ids}));
  if (a.json) {
    nlohmann::json j = {{"status", rpc::to_string(r.status)},
                        {"message", r.message},
                        {"width", r.width},
                        {"outputs", r.outputs},
                        {"server_us", r.server_us}};
    fmt::print("{}\n", j.dump());
  } else if (r.status != rpc::rpc_status::ok) {
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r.status), r.message);
  } else {
    const std::size_t n = a.ids.empty() ? a.seeds.size() : a.ids.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (a.ids.empty())
        fmt::print("seed {}:", a.seeds[i]);
      else
        fmt::print("id {}:", a.ids[i]);
      for (std::uint32_t k = 0; k < r.width; ++k) fmt::print(" {:.5g}", r.outputs[i * r.width + k]);
      fmt::print("\n");
    }
    fmt::print("server time {} us\n", r.server_us);
  }
  return status::ok();
}

struct rec_args {
  std::string input;                // JSON file ("-": stdin)
  std::vector<float> dense;         // one sample
  std::vector<std::string> sparse;  // one sample: keys per table ("3,7")
  std::uint32_t deadline_us = 0;
  bool json = false;
};

expected<rpc::rec_call> rec_call_of(const rec_args& a) {
  if (!a.input.empty()) {
    if (!a.dense.empty() || !a.sparse.empty())
      return make_error(errc::invalid_argument, "rec: give --input, or --dense and --sparse");
    return rec_call_from_json(a.input);
  }
  if (a.dense.empty() && a.sparse.empty())
    return make_error(errc::invalid_argument,
                      "rec: give --input FILE.json, or one sample as --dense and --sparse");
  rpc::rec_call call;
  call.batch = 1;
  call.dense = a.dense;
  for (const auto& keys : a.sparse) {
    rpc::rec_bag bag{{}, {0}};
    for (auto part : std::views::split(std::string_view(keys), ',')) {
      std::string_view text(part.begin(), part.end());
      std::int64_t k = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
      if (text.empty() || ec != std::errc() || p != text.data() + text.size())
        return make_error(errc::invalid_argument, "--sparse {}: '{}' is not a key", keys, text);
      bag.indices.push_back(k);
    }
    bag.offsets.push_back(std::int64_t(bag.indices.size()));
    call.sparse.push_back(std::move(bag));
  }
  return call;
}

status run_rec(const client_args& c, const rec_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto call, rec_call_of(a));
  call.model = c.model;
  call.deadline_us = a.deadline_us;
  SPINDLE_ASSIGN_OR_RETURN(auto client, open(c));
  SPINDLE_ASSIGN_OR_RETURN(auto r, client->infer_rec(call));
  if (a.json) {
    nlohmann::json j = {{"status", rpc::to_string(r.status)},
                        {"message", r.message},
                        {"scores", r.scores},
                        {"server_us", r.server_us}};
    fmt::print("{}\n", j.dump());
    return status::ok();
  }
  if (r.status != rpc::rpc_status::ok)
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r.status), r.message);
  for (std::size_t b = 0; b < r.scores.size(); ++b)
    fmt::print("sample {}: {:.6g}\n", b, r.scores[b]);
  fmt::print("server time {} us\n", r.server_us);
  return status::ok();
}

struct load_args {
  std::size_t requests = 1000, warmup = 100;
  int clients = 8;
  double rate = 0;
  std::string seeds = "", csv, plot, log;
  std::string concurrency_range, rate_range;  // sweep mode (load_sweep.hpp)
  std::uint64_t seed = 1;
  std::uint32_t deadline_us = 0;
  bool json = false;
  bool reproducible = false;  // request i carries sampler seed i + 1
  rec_load_options rec;       // recommendation models: the batches sent
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
    for (const auto& r : sched::degree_requests(ds, n)) out.push_back(r.seeds[0]);
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

// The latency distribution as CSV and, with `plot`, a PNG of the tail: the
// share of requests slower than x, both axes logarithmic, so p99 and p999 are as
// readable as p50 (a linear CDF hid them), with p50/p99/p999 marked and the
// title naming the model, the mode and the request count.
status write_cdf(const std::vector<double>& lat_ms, const std::string& csv, const std::string& plot,
                 const std::string& title) {
  std::vector<double> l = lat_ms;
  std::sort(l.begin(), l.end());
  const std::string path = csv.empty() ? plot + ".csv" : csv;
  {
    std::ofstream out(path);
    if (!out) return make_error(errc::io_error, "{}: cannot write", path);
    out << "latency_ms,fraction,slower\n";
    for (std::size_t i = 0; i < l.size(); ++i) {
      const double f = double(i + 1) / double(l.size());
      out << l[i] << "," << f << "," << std::max(1.0 - f, 1.0 / double(l.size())) << "\n";
    }
  }
  fmt::print(stderr, "wrote the latency CDF to {}\n", path);  // stderr: --json stays clean
  if (plot.empty() || l.empty()) return status::ok();
  std::string marks;
  int n = 1;
  for (auto [name, q] : {std::pair{"p50", 0.5}, {"p99", 0.99}, {"p999", 0.999}}) {
    const double x = pct(l, q);
    marks += fmt::format(
        "set arrow {} from {}, graph 0 to {}, graph 1 nohead dt 2\n"
        "set label {} '{} {:.3g} ms' at {}, graph {} offset 0.5,0 font ',9'\n",
        n, x, x, n, name, x, x, 0.95 - 0.06 * n);
    ++n;
  }
  const std::string script =
      "set terminal png size 900,550\nset output out\nset datafile separator ','\n"
      "set xlabel 'latency (ms)'\nset ylabel 'share of requests slower'\n"
      "set logscale xy\nset format y '10^{%L}'\nset key off\nset grid\nset title title\n" +
      marks + "plot data every ::1 u 1:3 w l lw 2\n";
  SPINDLE_TRY(run_gnuplot(script, plot, {{"data", path}, {"title", title}}));
  fmt::print(stderr, "wrote the latency plot to {}\n", plot);
  return status::ok();
}

status write_request_log(const std::string& path,
                         const std::vector<std::pair<double, rpc::rpc_status>>& per_request,
                         const std::vector<double>& send_at) {
  std::ofstream out(path);
  if (!out) return make_error(errc::io_error, "--log {}: cannot write", path);
  out << "index,sent_s,latency_ms,status\n";
  for (std::size_t i = 0; i < per_request.size(); ++i) {
    out << i << ',' << (i < send_at.size() ? send_at[i] : 0.0) << ',' << per_request[i].first << ','
        << rpc::to_string(per_request[i].second) << '\n';
  }
  return out ? status::ok() : make_error(errc::io_error, "--log {}: write failed", path);
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
  if (!a.log.empty()) SPINDLE_TRY(write_request_log(a.log, r.per_request, send_at));
  const std::string mode = a.rate > 0 ? fmt::format("open loop, Poisson {:.0f}/s", a.rate)
                                      : fmt::format("closed loop, {} in flight", a.clients);
  if (!a.csv.empty() || !a.plot.empty())
    SPINDLE_TRY(write_cdf(
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
status sweep(const load_args& a, const window_runner& run, std::size_t calls_per_window) {
  if (!a.concurrency_range.empty() && !a.rate_range.empty())
    return make_error(errc::invalid_argument,
                      "load: give --concurrency-range or --rate-range, not both");
  const bool open_loop = !a.rate_range.empty();
  SPINDLE_ASSIGN_OR_RETURN(auto levels,
                           parse_range(open_loop ? a.rate_range : a.concurrency_range,
                                       open_loop ? "--rate-range" : "--concurrency-range"));
  SPINDLE_ASSIGN_OR_RETURN(auto rows, run_sweep(run, calls_per_window, open_loop, levels, a.seed));
  print_sweep(rows, open_loop, a.json);
  if (!a.plot.empty()) SPINDLE_TRY(plot_sweep(rows, open_loop, a.plot));
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
  SPINDLE_ASSIGN_OR_RETURN(auto calls, rec_load_calls(m, m.name, o));
  for (auto& x : calls) x.deadline_us = a.deadline_us;
  auto call_of = [&](std::size_t i) -> const rpc::rec_call& { return calls[i % calls.size()]; };
  SPINDLE_TRY(client.run_closed_loop_rec(call_of, a.warmup, std::size_t(std::max(1, a.clients)),
                                         [](auto, auto&, double) {}));
  if (sweeping(a))
    return sweep(
        a,
        [&](std::size_t in_flight, const std::vector<double>& at, const answer_fn& done) {
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
status drive_door(const client_args& c, const load_args& a, const door_connect& connect,
                  std::uint32_t samples, const Infer& infer) {
  const auto threads = std::size_t(std::max(1, a.clients));
  SPINDLE_TRY(run_door_loop(connect, a.warmup, threads, {},
                            [&](auto& client, std::size_t i, auto) { (void)infer(client, i); }));
  if (sweeping(a))  // closed loop: a connection per call in flight; open: the --clients pool
    return sweep(
        a,
        [&](std::size_t in_flight, const std::vector<double>& at, const answer_fn& done) {
          return run_door_loop(connect, a.requests, at.empty() ? in_flight : threads, at,
                               [&](auto& client, std::size_t i, auto due) {
                                 const auto x = infer(client, a.warmup + i);
                                 done(x.status == rpc::rpc_status::ok,
                                      std::chrono::duration<double>(
                                          std::chrono::steady_clock::now() - due)
                                          .count());
                               });
        },
        a.requests);
  load_report r(a.requests);
  std::mutex mu;
  const auto send_at = poisson_schedule(a.requests, a.rate, a.seed);
  const auto t0 = std::chrono::steady_clock::now();
  SPINDLE_TRY(run_door_loop(connect, a.requests, threads, send_at,
                            [&](auto& client, std::size_t i, auto due) {
                              const auto x = infer(client, a.warmup + i);
                              const double s = std::chrono::duration<double>(
                                                   std::chrono::steady_clock::now() - due)
                                                   .count();
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
  SPINDLE_ASSIGN_OR_RETURN(auto connect, door_connector(a.door, c.connect, c.timeout_ms));
  SPINDLE_ASSIGN_OR_RETURN(auto probe, connect());
  SPINDLE_ASSIGN_OR_RETURN(auto m, probe->describe(c.model));
  if (m.kind != "gnn") {
    auto o = a.rec;
    o.seed = a.seed;
    SPINDLE_ASSIGN_OR_RETURN(auto calls, rec_load_calls(m, m.name, o));
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
  SPINDLE_ASSIGN_OR_RETURN(auto client, open(c));
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
  if (sweeping(a)) return sweep(a, capnp_gnn_runner(*client, measured), measured.size());
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

struct admin_args {
  std::string call, model, name, value;
  bool json = false;  // members: the raw JSON instead of the table
};

status run_admin(const client_args& c, const admin_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto token, token_of(c));
  SPINDLE_ASSIGN_OR_RETURN(auto client, open(c));
  expected<rpc::admin_reply> r =
      make_error(errc::invalid_argument, "admin: unknown call '{}'", a.call);
  if (a.call == "stats") r = client->stats(token);
  if (a.call == "models") r = client->list_models(token);
  if (a.call == "members") r = client->members(token);
  if (a.call == "tunables") r = client->get_tunables(token, a.model.empty() ? c.model : a.model);
  if (a.call == "set")
    r = client->set_tunable(token, a.model.empty() ? c.model : a.model, a.name, a.value);
  if (a.call == "load") r = client->load_model(token, a.model, a.name);
  if (a.call == "unload") r = client->unload_model(token, a.model);
  if (!r) return r.error();
  if (r->status != rpc::rpc_status::ok) {
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r->status), r->message);
  }
  if (a.call == "members" && !a.json && !r->json.empty())
    fmt::print("{}", members_table(nlohmann::json::parse(r->json)));
  else if (!r->json.empty())
    fmt::print("{}\n", nlohmann::json::parse(r->json).dump(2));
  for (const auto& m : r->models)
    fmt::print("{} {} {} in {} out {}\n", m.name, m.kind, m.arch, m.input_width, m.output_width);
  for (const auto& t : r->tunables) fmt::print("{} = {}\n", t.name, t.value);
  if (a.call == "set" || a.call == "load" || a.call == "unload") fmt::print("ok\n");
  return status::ok();
}

}  // namespace

void register_client(CLI::App& app, global_options&) {
  auto* cmd = app.add_subcommand("client",
                                 "Talk to a running server's front door (infer, rec, load, admin)");
  cmd->require_subcommand(1);
  auto c = std::make_shared<client_args>();
  cmd->add_option("--connect", c->connect,
                  "Server HOST:PORT, or several (HOST:PORT,HOST:PORT: a cluster's doors): one "
                  "call goes to the first that accepts; `load` spreads its calls over them")
      ->capture_default_str();
  cmd->add_option("--model", c->model, "Model name (see `admin models`)");
  cmd->add_option("--token", c->token, "Admin token");
  cmd->add_option("--token-file", c->token_file, "File holding the admin token");
  cmd->add_option("--timeout-ms", c->timeout_ms, "Per-call timeout")->capture_default_str();

  auto* infer = cmd->add_subcommand("infer", "One GNN request");
  auto ia = std::make_shared<infer_args>();
  infer->add_option("--seeds", ia->seeds, "Node rows in the dataset (0..N-1)")->delimiter(',');
  infer
      ->add_option("--ids", ia->ids,
                   "Nodes by the input data's ids instead (node_names.txt / node_ids.npy of "
                   "the served dataset), e.g. CiteSeer's 100157")
      ->delimiter(',');
  infer
      ->add_option("--sampler-seed", ia->sampler_seed,
                   "Sampler seed: nonzero samples the request on its own (same seeds + seed, "
                   "same answer); 0 shares its batch's sampled graph")
      ->capture_default_str();
  infer->add_option("--deadline-us", ia->deadline_us, "Deadline (0: none)")->capture_default_str();
  infer->add_flag("--json", ia->json, "Print JSON");
  infer->callback([c, ia] {
    if (int rc = report(run_infer(*c, *ia))) throw CLI::RuntimeError(rc);
  });

  auto* rec =
      cmd->add_subcommand("rec", "One recommendation (DLRM) request: click probability per sample");
  auto ra = std::make_shared<rec_args>();
  rec->add_option("--input", ra->input,
                  "JSON batch ('-': stdin): {\"dense\": [[x, ...] per sample], \"sparse\": "
                  "[[[key, ...] per table] per sample]}");
  rec->add_option("--dense", ra->dense, "One sample's dense features, comma-separated")
      ->delimiter(',');
  rec->add_option("--sparse", ra->sparse,
                  "One sample's keys for one table, comma-separated; repeat once per table, "
                  "in table order");
  rec->add_option("--deadline-us", ra->deadline_us, "Deadline (0: none)")->capture_default_str();
  rec->add_flag("--json", ra->json, "Print JSON");
  rec->callback([c, ra] {
    if (int rc = report(run_rec(*c, *ra))) throw CLI::RuntimeError(rc);
  });

  auto* load = cmd->add_subcommand("load", "Load generator with a latency report");
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
  load->callback([c, la] {
    if (int rc = report(run_load(*c, *la))) throw CLI::RuntimeError(rc);
  });

  auto* admin = cmd->add_subcommand(
      "admin",
      "One Admin call: stats | models | members | tunables [MODEL] | set MODEL NAME VALUE | "
      "load NAME MODEL_DIR | unload NAME");
  auto aa = std::make_shared<admin_args>();
  admin->add_option("call", aa->call, "stats, models, members, tunables, set, load or unload")
      ->required();
  admin->add_option("model", aa->model, "Model (tunables, set, load, unload)");
  admin->add_option("name", aa->name, "Tunable name (set); model directory on the server (load)");
  admin->add_option("value", aa->value, "New value (set)");
  admin->add_flag("--json", aa->json,
                  "members: the raw JSON (descriptors, bridges) instead of a table");
  admin->callback([c, aa] {
    if (int rc = report(run_admin(*c, *aa))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace spindle::apps
