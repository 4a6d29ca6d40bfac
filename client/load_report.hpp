// What one run of `spindle client load` measured (latencies, answers by status,
// each request's outcome) and its report: text or JSON, with the CDF, plot and
// per-request log beside it. One thread at a time.
#pragma once

#include <chrono>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::client {

struct load_report {
  std::vector<double> lat_ms;
  std::map<std::string, std::size_t> by_status;
  std::map<std::string, std::vector<double>> refused_ms;
  std::string first_error;
  std::vector<std::pair<double, transport::rpc::rpc_status>> per_request;
  explicit load_report(std::size_t n) : per_request(n) {}
  /// Counts answer `r` of request `i`, which took `s` seconds.
  template <class Answer>
  void record(std::size_t i, const Answer& r, double s) {
    namespace rpc = transport::rpc;
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

/// A run at one level: what it measured, how long it took and when each call was due.
struct load_outcome {
  load_report report{0};
  std::size_t requests = 0;
  double wall_s = 0;
  double cpu_s = 0;  // the client process's own CPU (every thread) over wall_s
  std::vector<double> send_at;                  // empty: closed loop
  std::map<std::string, std::size_t> per_door;  // ok answers per door, several doors only
  std::uint32_t samples = 0;                    // per call, recommendation models; 0: GNN
};

/// A run's two clocks, started at construction (or restart()): wall time, and
/// the CPU this process used, every thread together (what a load generator
/// takes from a server on the same machine).
class run_clock {
 public:
  run_clock();
  void restart() { *this = run_clock(); }
  double wall_s() const;
  double cpu_s() const;

 private:
  std::chrono::steady_clock::time_point t0_;
  double cpu0_;
};

/// Exponential gaps at `rate` per second: each request's scheduled send time
/// (empty when rate <= 0: closed loop).
std::vector<double> poisson_schedule(std::size_t n, double rate, std::uint64_t seed);

/// How the report is printed and what is written beside it.
struct report_options {
  std::string model;  // for the plot's title
  double rate = 0;
  int clients = 8;
  bool json = false;
  std::string csv, plot, log;  // files; empty: none
};

/// Writes the log, CSV and plot asked for, then prints the report (text or JSON).
status print_load_report(const load_outcome& o, const report_options& p);

}  // namespace spindle::client
