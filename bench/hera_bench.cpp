// Hera on this machine, against live `spindle serve` processes (Hera §VII):
//
// 1. Profiles a memory-bound DLRM(D)-like model, a compute-bound NCF and a
//    Wide & Deep alone (`spindle profile`: max QPS under the SLA for 1..W
//    workers), each model's "max load" being its best isolated QPS.
// 2. Fig. 14 analogue: DLRM(D) and NCF co-located on one server under Poisson
//    load that ramps up, drops for NCF at T1, then spikes for NCF while
//    DLRM(D) drops at T2. Run three times: a static equal split of the cores,
//    the PARTIES-style manager and Hera's (Algorithm 3 over the profile). Per
//    second: each model's p99 / SLA and workers (CSV and a PNG), then seconds
//    in SLA violation and EMU (Σ goodput / isolated max load) for each.
// 3. Co-location EMU of three pairs measured (both models at s x the QPS the
//    simulator expects of the pair, s bisected until both meet their SLAs;
//    one worker each) next to the simulator's prediction (colocated_qps).
//
// 4. (between 2 and 3) the SLA queue deadline on against off, NCF overloaded.
//
// Usage: hera_bench SPINDLE_BINARY [OUT_DIR] [SECONDS] [deadline]
//   (default /tmp/hera-bench, 30; "deadline": stop after the queue-deadline figure)
#include <signal.h>

#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench/bench_util.hpp"
#include "colocation/hera/colocation.hpp"
#include "colocation/hera/profile.hpp"
#include "config/model.hpp"
#include "core/gnuplot.hpp"
#include "core/subprocess.hpp"
#include "core/text_file.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::bench {
namespace {

namespace rpc = transport::rpc;
namespace hera = colocation::hera;

struct model_spec {
  std::string name, dir;
  int batch = 64, lookups = 1;  // samples per query, keys per table per sample
  config::model_desc desc;
  double sla_ms = 0, iso_qps = 0;  // from the profile
};

void must(const status& st, const char* what) {
  if (st) return;
  fmt::print(stderr, "hera_bench: {}: {}\n", what, st.to_string());
  std::exit(1);
}

int run(const std::vector<std::string>& argv) {
  auto child = child_process::spawn(argv);
  if (!child) return 127;
  while (child->read_line(600000)) {
  }
  return child->wait();
}

// A few distinct queries of `m`, cycled by the load generator.
std::vector<rpc::rec_call> make_calls(const model_spec& m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dense(0, 1);
  std::vector<rpc::rec_call> calls(16);
  for (auto& c : calls) {
    c.model = m.name;
    c.batch = std::uint32_t(m.batch);
    for (int i = 0; i < m.batch * m.desc.dense_in; ++i) c.dense.push_back(dense(rng));
    for (auto rows : m.desc.table_rows) {
      rpc::rec_bag bag;
      std::uniform_int_distribution<std::int64_t> key(0, rows - 1);
      bag.offsets.push_back(0);
      for (int b = 0; b < m.batch; ++b) {
        for (int l = 0; l < m.lookups; ++l) bag.indices.push_back(key(rng));
        bag.offsets.push_back(std::int64_t(bag.indices.size()));
      }
      c.sparse.push_back(std::move(bag));
    }
  }
  return calls;
}

// Poisson arrivals whose rate follows `rate(t)` (thinning of a rate-`peak` process).
std::vector<double> arrivals(const std::function<double(double)>& rate, double peak, double seconds,
                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(std::max(peak, 1e-9));
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> out;
  for (double t = gap(rng); t < seconds; t += gap(rng))
    if (u(rng) * peak < rate(t)) out.push_back(t);
  return out;
}

struct answer {
  double sent_s, latency_s;
  bool ok;
};

// Drives `m` with the given send times on its own connection; every answer kept.
std::vector<answer> drive(const std::string& endpoint, const model_spec& m,
                          const std::vector<double>& send_at, std::uint64_t seed) {
  auto client = rpc::rpc_client::connect(endpoint, 60000);
  must(client.error_or_ok(), "connect");
  const auto calls = make_calls(m, seed);
  std::vector<answer> out(send_at.size());
  must((*client)->run_open_loop_rec(
           [&](std::size_t i) -> const rpc::rec_call& { return calls[i % calls.size()]; }, send_at,
           [&](std::size_t i, const rpc::rec_answer& a, double s) {
             out[i] = {send_at[i], s, a.status == rpc::rpc_status::ok};
           },
           false),  // no polling between sends: the client must not take a core
       "open loop");
  return out;
}

struct server {
  child_process proc;
  std::string endpoint, token;
};

server start_server(const std::string& bin, const std::string& dir,
                    const std::vector<model_spec>& models, std::vector<std::string> extra,
                    int workers = 1) {
  std::vector<std::string> argv{
      bin, "serve", "--listen", "127.0.0.1:0", "--admin-token-file", dir + "/token"};
  argv.push_back("--rec-workers");
  argv.push_back(std::to_string(workers));
  for (const auto& m : models) {
    argv.push_back("--rec-model");
    argv.push_back(m.name + "=" + m.dir);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto p = child_process::spawn(argv);
  must(p.error_or_ok(), "spawn serve");
  auto at = p->wait_for("listening ", 120000);
  must(at.error_or_ok(), "serve did not start");
  auto token = read_text_file(dir + "/token", "token");
  std::string t = token ? *token : "";
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  return {std::move(*p), *at, t};
}

void stop_server(server& s) {
  s.proc.signal(SIGTERM);
  s.proc.wait();
}

// ---- 1. the models and their isolated profiles ----

std::vector<model_spec> make_models(const std::string& bin, const std::string& dir) {
  std::string d_rows;
  for (int t = 0; t < 8; ++t) d_rows += t ? ",50000" : "50000";
  // DLRM(D): Table I's widths, 8 tables of 256 (50,000 rows each: 410 MB, far
  // past the LLC), 80 lookups per table; NCF and W&D at `model init`'s scale.
  std::vector<std::pair<model_spec, std::vector<std::string>>> specs{
      {{"dlrm_d", dir + "/dlrm_d", 8, 80},
       {"--arch", "dlrm", "--variant", "D", "--tables", d_rows}},
      {{"ncf", dir + "/ncf", 64, 1}, {"--arch", "ncf"}},
      {{"wnd", dir + "/wnd", 64, 1}, {"--arch", "wnd"}}};
  std::vector<model_spec> out;
  for (auto& [m, flags] : specs) {
    if (!std::filesystem::exists(m.dir + "/model.toml")) {
      std::vector<std::string> argv{bin, "model", "init", "--out-dir", m.dir, "--name", m.name};
      argv.insert(argv.end(), flags.begin(), flags.end());
      if (run(argv) != 0) must(make_error(errc::internal, "model init {}", m.name), "models");
    }
    auto d = config::load_model_desc(m.dir);
    must(d.error_or_ok(), "model.toml");
    m.desc = *d;
    out.push_back(m);
  }
  return out;
}

hera::profile_table g_profiles;

void profile_models(const std::string& bin, const std::string& dir,
                    std::vector<model_spec>& models) {
  for (auto& m : models) {
    const std::string out = dir + "/profile-" + m.name + ".json";
    const int rc = run({bin, "profile", "--model", m.name + "=" + m.dir, "--workers", "4",
                        "--batch", std::to_string(m.batch), "--lookups", std::to_string(m.lookups),
                        "--seconds", "0.4", "--steps", "6", "--out", out});
    if (rc != 0)
      must(make_error(errc::internal, "spindle profile {}: exit {}", m.name, rc), "profile");
    auto t = hera::load_profile_table(out);
    must(t.error_or_ok(), "profile table");
    g_profiles.machine = t->machine;
    g_profiles.models[m.name] = t->models.at(m.name);
  }
  std::ofstream(dir + "/profile.json") << hera::to_json(g_profiles);
  fmt::print(
      "Isolated profiles ({} cores, memory copy {:.1f} GB/s measured by the profiler; "
      "queries of `batch` samples):\n",
      g_profiles.machine.cores, g_profiles.machine.mem_bw_gbps);
  fmt::print(
      "| model | batch x lookups | SLA (p99) | max QPS at 1..4 workers | max load | GB/s at max |\n"
      "|---|---|---|---|---|---|\n");
  for (auto& m : models) {
    const auto& p = g_profiles.models.at(m.name);
    m.sla_ms = p.sla_ms;
    m.iso_qps = hera::isolated_qps(p, g_profiles.machine);
    std::vector<std::string> q;
    for (int w = 1; w <= p.max_workers(); ++w) q.push_back(fmt::format("{:.0f}", p.at(w, 1)));
    fmt::print("| {} | {} x {} | {} ms | {} | {:.0f} | {:.2f} |\n", m.name, m.batch, m.lookups,
               m.sla_ms, fmt::join(q, " / "), m.iso_qps, p.mem_bw_gbps.back());
  }
}

// ---- 2. Fig. 14: load changes under three managers ----

// Fraction of max load over time (Hera Fig. 14): both ramp until T1 = 0.4 T;
// then NCF drops to 20%; at T2 = 0.7 T NCF spikes to 60% and DLRM(D) drops to 10%.
double fig14_load(bool is_d, double t, double T) {
  const double t1 = 0.4 * T, t2 = 0.7 * T;
  if (t < t1) return is_d ? 0.2 + 0.5 * t / t1 : 0.2 + 0.3 * t / t1;
  if (t < t2) return is_d ? 0.7 : 0.2;
  return is_d ? 0.1 : 0.6;
}

struct second {
  double tail_ratio[2] = {0, 0}, workers[2] = {0, 0}, emu = 0;
  bool violated[2] = {false, false};
};

// Per second: p99 of the server time of calls sent in it, over the SLA; a
// refused or failed call violates too. EMU: Σ goodput (ok within SLA) / max load.
std::vector<second> per_second(const std::vector<model_spec>& m,
                               const std::vector<std::vector<answer>>& got,
                               const std::vector<std::array<double, 3>>& workers, double T) {
  std::vector<second> out(static_cast<std::size_t>(T));
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<std::vector<double>> lat(out.size());
    std::vector<double> good(out.size(), 0);
    for (const auto& a : got[k]) {
      const auto s = std::size_t(a.sent_s);
      if (s >= out.size()) continue;
      lat[s].push_back(a.ok ? a.latency_s * 1e3 : 1e9);
      if (!a.ok) out[s].violated[k] = true;
      good[s] += a.ok && a.latency_s * 1e3 <= m[k].sla_ms;
    }
    for (std::size_t s = 0; s < out.size(); ++s) {
      const double p99 = percentile(lat[s], 0.99);
      out[s].tail_ratio[k] = std::min(p99 / m[k].sla_ms, 10.0);
      out[s].violated[k] = out[s].violated[k] || p99 > m[k].sla_ms;
      out[s].emu += good[s] / m[k].iso_qps;
    }
  }
  for (const auto& w : workers)
    for (std::size_t k = 0; k < 2; ++k)
      if (std::size_t(w[0]) < out.size()) out[std::size_t(w[0])].workers[k] = w[1 + k];
  return out;
}

// Polls `stats` every 250 ms: [t, workers of m0, workers of m1].
std::vector<std::array<double, 3>> watch_workers(const server& srv,
                                                 const std::vector<model_spec>& m,
                                                 const std::atomic<bool>& stop) {
  std::vector<std::array<double, 3>> out;
  auto c = rpc::rpc_client::connect(srv.endpoint, 60000);
  if (!c) return out;
  const auto t0 = std::chrono::steady_clock::now();
  while (!stop) {
    if (auto st = (*c)->stats(srv.token)) {
      const auto j = nlohmann::json::parse(st->json, nullptr, false);
      if (!j.is_discarded())
        out.push_back({seconds_since(t0), j["models"][m[0].name].value("workers", 0.0),
                       j["models"][m[1].name].value("workers", 0.0)});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return out;
}

std::vector<second> fig14_run(const std::string& bin, const std::string& dir,
                              const std::vector<model_spec>& m, const std::string& policy,
                              double T) {
  std::vector<std::string> extra;
  if (policy != "static")
    extra = {"--node-manager",        policy, "--profiles", dir + "/profile.json",
             "--manager-max-workers", "4"};
  server srv = start_server(bin, dir, m, extra);
  {
    auto c = rpc::rpc_client::connect(srv.endpoint, 60000);
    if (c) (void)(*c)->set_tunable(srv.token, m[0].name, "manager_period_ms", "500");
  }
  std::vector<std::vector<answer>> got(2);
  std::atomic<bool> stop{false};
  std::vector<std::array<double, 3>> workers;
  std::thread watcher([&] { workers = watch_workers(srv, m, stop); });
  std::vector<std::thread> load;
  for (std::size_t k = 0; k < 2; ++k)
    load.emplace_back([&, k] {
      const bool is_d = k == 0;
      auto send = arrivals([&](double t) { return fig14_load(is_d, t, T) * m[k].iso_qps; },
                           0.7 * m[k].iso_qps, T, 100 + k);
      got[k] = drive(srv.endpoint, m[k], send, 7 + k);
    });
  for (auto& t : load) t.join();
  stop = true;
  watcher.join();
  stop_server(srv);
  return per_second(m, got, workers, T);
}

void fig14_plot(const std::string& dir, const std::vector<std::string>& policies,
                const std::vector<model_spec>& m) {
  std::string script =
      "set terminal pngcairo size 1100,900 font ',10'\nset output out\n"
      "set multiplot layout 3,1\nset xlabel 'seconds'\nset ylabel 'p99 / SLA'\n"
      "set y2label 'workers'\nset ytics nomirror\nset y2tics\nset yrange [0:3]\n"
      "set y2range [0:5]\nset key top left\nset datafile separator ','\n";
  for (const auto& p : policies)
    script += fmt::format(
        "set title '{0}'\nplot '{1}/fig14-{0}.csv' u 1:2 w l lw 2 t '{2} p99/SLA', '' u 1:3 w l "
        "lw 2 t '{3} p99/SLA', '' u 1:4 axes x1y2 w steps dt 2 t '{2} workers', '' u 1:5 axes "
        "x1y2 w steps dt 2 t '{3} workers', 1 w l lc 'black' dt 3 t 'SLA'\n",
        p, dir, m[0].name, m[1].name);
  if (auto st = run_gnuplot(script, dir + "/fig14.png"); !st)
    fmt::print("(no PNG: {})\n", st.message());
}

void fig14(const std::string& bin, const std::string& dir, const std::vector<model_spec>& m,
           double T) {
  fmt::print(
      "\nFig. 14 analogue: {} + {} co-located, {:.0f} s of Poisson load (T1 = {:.0f} s: "
      "{} drops; T2 = {:.0f} s: {} spikes, {} drops):\n",
      m[0].name, m[1].name, T, 0.4 * T, m[1].name, 0.7 * T, m[1].name, m[0].name);
  fmt::print(
      "| manager | {0} s in violation | {1} s in violation | mean EMU | mean workers "
      "{0} / {1} |\n|---|---|---|---|---|\n",
      m[0].name, m[1].name);
  const std::vector<std::string> policies{"static", "parties", "hera"};
  for (const auto& p : policies) {
    const auto secs = fig14_run(bin, dir, m, p, T);
    std::ofstream csv(dir + "/fig14-" + p + ".csv");
    int bad[2] = {0, 0};
    double emu = 0, w[2] = {0, 0};
    for (std::size_t s = 0; s < secs.size(); ++s) {
      const auto& x = secs[s];
      csv << fmt::format("{},{:.3f},{:.3f},{},{},{:.3f}\n", s + 0.5, x.tail_ratio[0],
                         x.tail_ratio[1], x.workers[0], x.workers[1], x.emu);
      for (int k = 0; k < 2; ++k) bad[k] += x.violated[k], w[k] += x.workers[k];
      emu += x.emu;
    }
    const double n = double(std::max<std::size_t>(1, secs.size()));
    fmt::print("| {} | {} | {} | {:.0f}% | {:.1f} / {:.1f} |\n", p, bad[0], bad[1], 100 * emu / n,
               w[0] / n, w[1] / n);
  }
  fig14_plot(dir, policies, m);
  fmt::print(
      "per-second series: {}/fig14-*.csv (t, p99/SLA x2, workers x2, EMU); plot {}/fig14.png\n",
      dir, dir);
}

// ---- SLA queue deadline: late calls refused instead of computed ----

// NCF alone at 2x its served max load for 3 s, with queue_deadline_us = its SLA
// (the default) and 0 (computed however late): calls answered ok, goodput (ok
// within SLA at the client) and the p99 of the ok answers, same run. Admission
// control (sized from the SLO) refuses part of the overload in both.
void queue_deadline_figure(const std::string& bin, const std::string& dir, const model_spec& m) {
  fmt::print(
      "\nQueue deadline from the SLA ({} alone at 2x its served max load, 3 s, 2 "
      "workers):\n| queue_deadline_us | calls | answered ok | ok within SLA | p99 of ok "
      "answers |\n|---|---|---|---|---|\n",
      m.name);
  for (const std::uint32_t deadline : {std::uint32_t(m.sla_ms * 1000), 0u}) {
    server srv = start_server(bin, dir, {m}, {}, g_profiles.machine.cores);
    auto admin = rpc::rpc_client::connect(srv.endpoint, 60000);
    must(admin.error_or_ok(), "connect");
    (void)(*admin)->set_tunable(srv.token, m.name, "queue_deadline_us", std::to_string(deadline));
    (void)(*admin)->set_tunable(srv.token, m.name, "max_queue", "100000");  // no admission cut
    const double rate = 2 * m.iso_qps;
    const auto got =
        drive(srv.endpoint, m, arrivals([rate](double) { return rate; }, rate, 3.0, 77), 5);
    std::vector<double> ok;
    std::size_t good = 0;
    for (const auto& a : got)
      if (a.ok) ok.push_back(a.latency_s * 1e3), good += a.latency_s * 1e3 <= m.sla_ms;
    std::uint64_t answered = 0;
    if (auto st = (*admin)->stats(srv.token)) {
      const auto j = nlohmann::json::parse(st->json, nullptr, false);
      if (!j.is_discarded())
        answered = j["models"][m.name].value("inferences", 0ull) / std::uint64_t(m.batch);
    }
    fmt::print("| {} | {} | {} | {} | {:.1f} ms |\n", deadline, got.size(), answered, good,
               percentile(ok, 0.99));
    stop_server(srv);
  }
}

// ---- 3. measured co-location EMU against the simulator ----

// Each model of `m` at its rate in `qps` (Poisson, 2 s, at once): does every
// call succeed and every model's p99 meet its SLA?
bool meets_sla(const server& srv, const std::vector<model_spec>& m, const std::vector<double>& qps,
               std::uint64_t seed) {
  std::vector<std::vector<answer>> got(m.size());
  std::vector<std::thread> load;
  for (std::size_t k = 0; k < m.size(); ++k)
    load.emplace_back([&, k] {
      const double r = qps[k];
      got[k] = drive(srv.endpoint, m[k], arrivals([r](double) { return r; }, r, 2.0, seed + k), k);
    });
  for (auto& t : load) t.join();
  for (std::size_t k = 0; k < m.size(); ++k) {
    std::vector<double> lat;
    for (const auto& x : got[k]) {
      if (!x.ok) return false;
      lat.push_back(x.latency_s * 1e3);
    }
    if (percentile(lat, 0.99) > m[k].sla_ms) return false;
  }
  return true;
}

// The highest s in (0, hi) with meets(s), bisected 6 times.
double bisect(double hi, const std::function<bool(double)>& meets) {
  double lo = 0;
  for (int step = 0; step < 6; ++step) {
    const double mid = (lo + hi) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

// Hera's max load: each model alone on the served path (RPC, gateway, dynamic
// batching, a pool of `cores` workers), the highest Poisson rate meeting its SLA.
void served_max_load(const std::string& bin, const std::string& dir, std::vector<model_spec>& m) {
  server srv = start_server(bin, dir, m, {}, g_profiles.machine.cores);
  fmt::print(
      "\nMax load on the served path (alone, {} workers, over Cap'n Proto; the unit of "
      "the loads and EMU below):\n| model | profile (in process) | served |\n|---|---|---|\n",
      g_profiles.machine.cores);
  for (auto& x : m) {
    const double profiled = x.iso_qps;
    x.iso_qps = bisect(1.5 * profiled, [&](double r) { return meets_sla(srv, {x}, {r}, 31); });
    fmt::print("| {} | {:.0f} | {:.0f} |\n", x.name, profiled, x.iso_qps);
  }
  stop_server(srv);
}

void pair_emu(const std::string& bin, const std::string& dir, const std::vector<model_spec>& m) {
  fmt::print(
      "\nCo-location EMU, measured (one worker each, both at s x the simulator's QPS, s "
      "bisected 6 times) vs the simulator (colocated_qps):\n"
      "| pair | simulator QPS | simulator EMU | s | measured EMU | simulator error |\n"
      "|---|---|---|---|---|---|\n");
  server srv = start_server(bin, dir, m, {});
  const std::vector<std::pair<int, int>> pairs{{0, 1}, {0, 2}, {1, 2}};
  for (auto [i, j] : pairs) {
    const auto& a = m[std::size_t(i)];
    const auto& b = m[std::size_t(j)];
    const auto [qa, qb] = hera::colocated_qps(g_profiles.models.at(a.name),
                                              g_profiles.models.at(b.name), g_profiles.machine);
    const auto& machine = g_profiles.machine;
    const double emu_pred = qa / hera::isolated_qps(g_profiles.models.at(a.name), machine) +
                            qb / hera::isolated_qps(g_profiles.models.at(b.name), machine);
    const double lo = bisect(2.0, [&](double x) {
      return meets_sla(srv, {a, b}, {x * qa, x * qb}, 50);
    });
    const double emu_meas = lo * qa / a.iso_qps + lo * qb / b.iso_qps;
    fmt::print("| {} + {} | {:.0f} + {:.0f} | {:.0f}% | {:.2f} | {:.0f}% | {:+.0f}% |\n", a.name,
               b.name, qa, qb, 100 * emu_pred, lo, 100 * emu_meas,
               emu_meas > 0 ? 100 * (emu_pred - emu_meas) / emu_meas : 0.0);
  }
  stop_server(srv);
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle::bench;
  if (argc < 2) {
    fmt::print(stderr, "usage: hera_bench SPINDLE_BINARY [OUT_DIR] [SECONDS]\n");
    return 2;
  }
  const std::string bin = argv[1];
  const std::string dir = argc > 2 ? argv[2] : "/tmp/hera-bench";
  const double seconds = argc > 3 ? std::atof(argv[3]) : 30.0;
  std::filesystem::create_directories(dir);
  auto models = make_models(bin, dir);
  profile_models(bin, dir, models);
  served_max_load(bin, dir, models);
  queue_deadline_figure(bin, dir, models[1]);
  if (argc > 4 && std::string(argv[4]) == "deadline") return 0;  // only up to here
  fig14(bin, dir, {models[0], models[1]}, seconds);
  pair_emu(bin, dir, models);
  return 0;
}
