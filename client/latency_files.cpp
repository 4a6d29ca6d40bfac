#include "client/latency_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "core/gnuplot.hpp"
#include "core/percentile.hpp"

namespace spindle::client {

namespace rpc = transport::rpc;

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

}  // namespace spindle::client
