#include "client/load_report.hpp"

#include <fmt/format.h>
#include <time.h>

#include <nlohmann/json.hpp>
#include <random>

#include "client/latency_files.hpp"
#include "core/percentile.hpp"

namespace spindle::client {
namespace {

void print_json(const load_outcome& o, const report_options& p, double tput) {
  const auto& r = o.report;
  const auto& lat_ms = r.lat_ms;
  nlohmann::json j = {{"requests", o.requests},
                      {"answered_ok", lat_ms.size()},
                      {"status", r.by_status},
                      {"throughput_rps", tput},
                      {"wall_s", o.wall_s},
                      {"client_cpu_s", o.cpu_s},
                      {"client_cpu_us_per_call", o.requests ? o.cpu_s / double(o.requests) * 1e6 : 0.0},
                      {"mode", p.rate > 0 ? "open" : "closed"},
                      {"latency_ms",
                       {{"p50", pct(lat_ms, 0.5)},
                        {"p90", pct(lat_ms, 0.9)},
                        {"p99", pct(lat_ms, 0.99)},
                        {"p999", pct(lat_ms, 0.999)}}}};
  if (o.samples > 0) {
    j["samples_per_call"] = o.samples;
    j["samples_per_s"] = tput * o.samples;
  }
  for (const auto& [st, v] : r.refused_ms)
    j["refused_latency_ms"][st] = {{"p50", pct(v, 0.5)}, {"p99", pct(v, 0.99)}};
  if (!r.first_error.empty()) j["first_error"] = r.first_error;
  if (!o.per_door.empty()) j["answered_ok_by_door"] = o.per_door;
  fmt::print("{}\n", j.dump(2));
}

void print_text(const load_outcome& o, const report_options& p, double tput,
                const std::string& mode) {
  const auto& r = o.report;
  const auto& lat_ms = r.lat_ms;
  fmt::print("{} requests ({}), {:.2f} s: {:.0f} req/s ok{}\n", o.requests,
             p.rate > 0 ? mode : fmt::format("closed loop, {} clients", p.clients), o.wall_s, tput,
             o.samples > 0
                 ? fmt::format(" ({:.0f} samples/s, {} per call)", tput * o.samples, o.samples)
                 : "");
  fmt::print("latency p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  p999 {:.3f} ms\n",
             pct(lat_ms, 0.5), pct(lat_ms, 0.9), pct(lat_ms, 0.99), pct(lat_ms, 0.999));
  if (o.requests > 0)
    fmt::print("load generator CPU: {:.1f} us a call ({:.2f} cores)\n",
               o.cpu_s / double(o.requests) * 1e6, o.wall_s > 0 ? o.cpu_s / o.wall_s : 0.0);
  for (const auto& [s, n] : r.by_status) {
    if (auto it = r.refused_ms.find(s); it != r.refused_ms.end()) {
      fmt::print("  {}: {} (answered in p50 {:.3f} ms, p99 {:.3f} ms)\n", s, n,
                 pct(it->second, 0.5), pct(it->second, 0.99));
    } else {
      fmt::print("  {}: {}\n", s, n);
    }
  }
  if (!r.first_error.empty()) fmt::print("first error: {}\n", r.first_error);
  for (const auto& [door, n] : o.per_door) fmt::print("  answered ok by {}: {}\n", door, n);
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

run_clock::run_clock() : t0_(std::chrono::steady_clock::now()), cpu0_(process_cpu_seconds()) {}

double run_clock::wall_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

double run_clock::cpu_s() const { return process_cpu_seconds() - cpu0_; }

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

status print_load_report(const load_outcome& o, const report_options& p) {
  if (!p.log.empty()) SPINDLE_TRY(write_request_log(p.log, o.report.per_request, o.send_at));
  const std::string mode = p.rate > 0 ? fmt::format("open loop, Poisson {:.0f}/s", p.rate)
                                      : fmt::format("closed loop, {} in flight", p.clients);
  if (!p.csv.empty() || !p.plot.empty())
    SPINDLE_TRY(write_cdf(
        o.report.lat_ms, p.csv, p.plot,
        fmt::format("spindle client load: model {}, {}, {} requests", p.model, mode, o.requests)));
  const double tput = double(o.report.lat_ms.size()) / o.wall_s;
  if (p.json)
    print_json(o, p, tput);
  else
    print_text(o, p, tput, mode);
  return status::ok();
}

}  // namespace spindle::client
