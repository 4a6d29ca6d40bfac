// Counters and latency histograms of one served model, updated from the RPC
// and CAF threads without locks (atomics), read by Admin stats (JSON) and the
// Prometheus endpoint (text exposition). Internal to the gateway.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sched/admission.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors::detail {

/// A Prometheus histogram with fixed buckets (seconds).
class histogram {
 public:
  // From 10 µs: stage times of small batches are tens of microseconds, and a
  // first bucket of 0.5 ms held 97-99.98% of them.
  static constexpr std::array<double, 17> bounds = {
      0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
      0.01,    0.025,    0.05,    0.1,    0.25,    0.5,    1.0,   2.5};
  void observe(double seconds);
  /// Lines `<name>_bucket{<labels>,le="..."} n`, `_sum`, `_count`.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

struct model_counters {
  std::atomic<std::uint64_t> requests{0}, ok{0}, overloaded{0}, deadline_exceeded{0},
      bad_request{0}, errors{0};
  /// Inferences answered ok: seeds of GNN calls, samples of recommendation calls
  /// (Triton's nv_inference_count; requests count calls).
  std::atomic<std::uint64_t> inferences{0};
  histogram latency;                                 // end to end, ok answers
  histogram batching, sampling, gathering, compute;  // per request (GNN)

  /// Counts an answer; ok answers also feed the latency samples.
  void record(transport::rpc::rpc_status s, double ms);
  /// Counters, latency percentiles and the model's admission state.
  nlohmann::json json(const sched::admission_control& admission);
  /// Appends this model's samples to `families` (metric family -> its lines), so
  /// the caller can print each family as one group, as the text format requires.
  /// `stages`: also the per-stage histograms (GNN models have them; DLRMs do not).
  void render(std::map<std::string, std::string>& families, const std::string& model,
              const sched::admission_control& admission, bool stages) const;

 private:
  std::mutex mu_;
  // Ring of the last 100,000 ok answers: latency and when it was recorded.
  struct sample {
    double ms;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<sample> latency_ms_;  // guarded by mu_
  std::size_t next_ = 0;            // guarded by mu_
};

}  // namespace spindle::actors::detail
