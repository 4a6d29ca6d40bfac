// What `client load` writes beside its report: the latency distribution as
// CSV (and a gnuplot PNG of its tail), and one line per measured request.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::client {

/// The latency CDF as CSV (`csv`, or PLOT.csv) and, with `plot`, a PNG of the
/// share of requests slower than x, log-log, p50/p99/p999 marked.
status write_cdf(const std::vector<double>& lat_ms, const std::string& csv, const std::string& plot,
                 const std::string& title);
/// index, scheduled send time, latency and status of every measured request.
status write_request_log(
    const std::string& path,
    const std::vector<std::pair<double, transport::rpc::rpc_status>>& per_request,
    const std::vector<double>& send_at);

}  // namespace spindle::client
