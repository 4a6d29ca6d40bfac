#include "client/load_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <mutex>
#include <random>

#include "client/load_report.hpp"
#include "core/gnuplot.hpp"
#include "core/percentile.hpp"

namespace spindle::client {
namespace {

namespace rpc = transport::rpc;

bool close_to(double a, double b) {
  return std::abs(a - b) <= 0.1 * std::max({std::abs(a), std::abs(b), 1e-9});
}

// One window at one level: ok latencies and counts.
expected<sweep_row> window(const window_runner& run, std::size_t calls, bool open_loop,
                           double level, std::mt19937_64& rng) {
  std::vector<double> lat_ms;
  sweep_row row;
  row.level = level;
  std::mutex mu;  // KServe runners answer from several threads
  auto done = [&](bool ok, double s) {
    std::lock_guard lock(mu);
    if (ok) {
      lat_ms.push_back(s * 1e3);
    } else {
      ++row.refused;
    }
  };
  std::vector<double> at;
  if (open_loop) {
    std::exponential_distribution<double> gap(level);
    at.resize(calls);
    double t = 0;
    for (auto& x : at) x = t += gap(rng);
  }
  const run_clock clock;
  SPINDLE_TRY(run(open_loop ? 0 : std::size_t(level), at, done));
  const double wall = clock.wall_s();
  row.ok = lat_ms.size();
  const std::size_t sent = row.ok + row.refused;
  row.client_cpu_us = sent ? clock.cpu_s() / double(sent) * 1e6 : 0;
  row.throughput = wall > 0 ? double(lat_ms.size()) / wall : 0;
  row.p50_ms = pct(lat_ms, 0.5);
  row.p99_ms = pct(lat_ms, 0.99);
  return row;
}

}  // namespace

expected<std::vector<double>> parse_range(std::string_view text, std::string_view flag) {
  std::vector<double> parts;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto colon = text.find(':', pos);
    const std::string item(
        text.substr(pos, colon == std::string_view::npos ? text.npos : colon - pos));
    try {
      std::size_t used = 0;
      parts.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return make_error(errc::invalid_argument, "{} '{}': '{}' is not a number", flag, text, item);
    }
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  if (parts.size() == 1) parts = {parts[0], parts[0], 1};
  if (parts.size() != 3 || !(parts[0] > 0) || parts[1] < parts[0] || !(parts[2] > 0))
    return make_error(errc::invalid_argument,
                      "{} '{}': expected START:END:STEP with 0 < START <= END and STEP > 0", flag,
                      text);
  std::vector<double> levels;
  for (double v = parts[0]; v <= parts[1] + 1e-9 && levels.size() < 1000; v += parts[2])
    levels.push_back(v);
  return levels;
}

window_runner capnp_gnn_runner(rpc::rpc_client& client, const std::vector<rpc::gnn_call>& calls) {
  return [&client, &calls](std::size_t in_flight, const std::vector<double>& send_at,
                           const answer_fn& done) {
    auto each = [&](std::size_t, const rpc::gnn_answer& a, double s) {
      done(a.status == rpc::rpc_status::ok, s);
    };
    return send_at.empty() ? client.run_closed_loop(calls, in_flight, each)
                           : client.run_open_loop(calls, send_at, each);
  };
}

expected<std::vector<sweep_row>> run_sweep(const window_runner& run, std::size_t calls,
                                           bool open_loop, const std::vector<double>& levels,
                                           std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<sweep_row> rows;
  for (double level : levels) {
    sweep_row last;
    for (int w = 1; w <= 4; ++w) {
      SPINDLE_ASSIGN_OR_RETURN(auto now, window(run, calls, open_loop, level, rng));
      now.windows = w;
      now.stable =
          w > 1 && close_to(now.throughput, last.throughput) && close_to(now.p99_ms, last.p99_ms);
      last = now;
      if (last.stable) break;
    }
    rows.push_back(last);
  }
  return rows;
}

void print_sweep(const std::vector<sweep_row>& rows, bool open_loop, bool json) {
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows)
      j.push_back({{open_loop ? "rate" : "concurrency", r.level},
                   {"throughput_rps", r.throughput},
                   {"p50_ms", r.p50_ms},
                   {"p99_ms", r.p99_ms},
                   {"ok", r.ok},
                   {"refused", r.refused},
                   {"client_cpu_us_per_call", r.client_cpu_us},
                   {"windows", r.windows},
                   {"stable", r.stable}});
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{:>12} {:>12} {:>9} {:>9} {:>9} {:>8} {:>14} {}\n",
             open_loop ? "rate/s" : "in flight", "ok/s", "p50 ms", "p99 ms", "refused", "windows",
             "client us/call", "");
  for (const auto& r : rows)
    fmt::print("{:>12.0f} {:>12.0f} {:>9.3f} {:>9.3f} {:>9} {:>8} {:>14.1f} {}\n", r.level,
               r.throughput, r.p50_ms, r.p99_ms, r.refused, r.windows, r.client_cpu_us,
               r.stable ? "" : "(not stable)");
}

status plot_sweep(const std::vector<sweep_row>& rows, bool open_loop, const std::string& png) {
  const std::string data = png + ".csv";
  {
    std::ofstream out(data);
    if (!out) return make_error(errc::io_error, "--plot {}: cannot write {}", png, data);
    for (const auto& r : rows) out << r.throughput << ',' << r.p99_ms << ',' << r.level << '\n';
  }
  const std::string script =
      std::string(
          "set terminal png size 900,550\nset output out\nset datafile separator ','\n"
          "set xlabel 'throughput (ok answers/s)'\nset ylabel 'p99 latency (ms)'\n"
          "set logscale y\nset key off\nset grid\n"
          "set title 'spindle client load: p99 vs throughput, ") +
      (open_loop ? "open loop (Poisson rate per point)"
                 : "closed loop (calls in flight per point)") +
      "'\nplot data u 1:2 w lp lw 2 pt 7, data u 1:2:3 w labels offset 0,1\n";
  SPINDLE_TRY(run_gnuplot(script, png, {{"data", data}}));
  fmt::print(stderr, "wrote the sweep to {} and its plot to {}\n", data, png);
  return status::ok();
}

status sweep_levels(const window_runner& run, std::size_t calls,
                    const std::string& concurrency_range, const std::string& rate_range,
                    std::uint64_t seed, bool json, const std::string& png) {
  if (!concurrency_range.empty() && !rate_range.empty())
    return make_error(errc::invalid_argument,
                      "load: give --concurrency-range or --rate-range, not both");
  const bool open_loop = !rate_range.empty();
  SPINDLE_ASSIGN_OR_RETURN(auto levels,
                           parse_range(open_loop ? rate_range : concurrency_range,
                                       open_loop ? "--rate-range" : "--concurrency-range"));
  SPINDLE_ASSIGN_OR_RETURN(auto rows, run_sweep(run, calls, open_loop, levels, seed));
  print_sweep(rows, open_loop, json);
  if (!png.empty()) SPINDLE_TRY(plot_sweep(rows, open_loop, png));
  return status::ok();
}

}  // namespace spindle::client
