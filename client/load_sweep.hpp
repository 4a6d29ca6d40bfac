// `spindle client load --concurrency-range A:B:STEP | --rate-range A:B:STEP`:
// the load generator run level by level, as Triton's perf_analyzer does. Each
// level is measured in windows of --requests calls until two consecutive windows
// agree (throughput and p99 within 10%), at most 4; one row per level, and a
// throughput-vs-p99 plot.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::client {

struct sweep_row {
  double level = 0;       // calls in flight (closed loop) or Poisson rate (open loop)
  double throughput = 0;  // ok answers per second, last window
  double p50_ms = 0, p99_ms = 0;
  std::size_t ok = 0, refused = 0;  // last window
  double client_cpu_us = 0;         // the load generator's CPU per call sent, last window
  int windows = 0;
  bool stable = false;  // the last two windows agreed
};

/// "A:B:STEP" -> A, A+STEP, ... <= B (A alone: one level). Errors name `flag`.
expected<std::vector<double>> parse_range(std::string_view text, std::string_view flag);

/// One window of calls at one level, on whatever door and model kind: open loop
/// when `send_at` is non-empty (call i due send_at[i] s after the start), else
/// closed loop with `in_flight` calls outstanding. `done(ok, seconds)` once per call.
using answer_fn = std::function<void(bool ok, double seconds)>;
using window_runner = std::function<status(std::size_t in_flight,
                                           const std::vector<double>& send_at,
                                           const answer_fn& done)>;

/// Measures every level, each window `calls` calls run by `run`.
expected<std::vector<sweep_row>> run_sweep(const window_runner& run, std::size_t calls,
                                           bool open_loop, const std::vector<double>& levels,
                                           std::uint64_t seed);

/// The runner of GNN calls on the Cap'n Proto door (`calls`: one window's worth).
window_runner capnp_gnn_runner(transport::rpc::rpc_client& client,
                               const std::vector<transport::rpc::gnn_call>& calls);

/// The rows as a table (stdout) or JSON, and as a PNG of p99 against throughput.
void print_sweep(const std::vector<sweep_row>& rows, bool open_loop, bool json);
status plot_sweep(const std::vector<sweep_row>& rows, bool open_loop, const std::string& png);

/// The whole sweep for --concurrency-range (closed loop) or --rate-range (open
/// loop; give one, not both): every level through `run`, each window `calls`
/// calls, then the rows printed (table or JSON) and, with `png`, plotted.
status sweep_levels(const window_runner& run, std::size_t calls,
                    const std::string& concurrency_range, const std::string& rate_range,
                    std::uint64_t seed, bool json, const std::string& png);

}  // namespace spindle::client
