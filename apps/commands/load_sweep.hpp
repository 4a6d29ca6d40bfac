// `spindle client load --concurrency-range A:B:STEP | --rate-range A:B:STEP`:
// the load generator run level by level, as Triton's perf_analyzer does. Each
// level is measured in windows of --requests calls until two consecutive windows
// agree (throughput and p99 within 10%), at most 4; one row per level, and a
// throughput-vs-p99 plot.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::apps {

struct sweep_row {
  double level = 0;       // calls in flight (closed loop) or Poisson rate (open loop)
  double throughput = 0;  // ok answers per second, last window
  double p50_ms = 0, p99_ms = 0;
  std::size_t ok = 0, refused = 0;  // last window
  int windows = 0;
  bool stable = false;  // the last two windows agreed
};

/// "A:B:STEP" -> A, A+STEP, ... <= B (A alone: one level). Errors name `flag`.
expected<std::vector<double>> parse_range(std::string_view text, std::string_view flag);

/// Measures every level with `calls` (one window's worth, reused per window).
expected<std::vector<sweep_row>> run_sweep(transport::rpc::rpc_client& client,
                                           const std::vector<transport::rpc::gnn_call>& calls,
                                           bool open_loop, const std::vector<double>& levels,
                                           std::uint64_t seed);

/// The rows as a table (stdout) or JSON, and as a PNG of p99 against throughput.
void print_sweep(const std::vector<sweep_row>& rows, bool open_loop, bool json);
status plot_sweep(const std::vector<sweep_row>& rows, bool open_loop, const std::string& png);

}  // namespace spindle::apps
