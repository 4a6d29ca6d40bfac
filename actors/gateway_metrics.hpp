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
#include <span>
#include <string>
#include <vector>

#include "nn/type_rows.hpp"
#include "serving/admission.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors::detail {

/// A Prometheus histogram with fixed buckets: latency in seconds by default.
class histogram {
 public:
  // From 10 µs: stage times of small batches are tens of microseconds, and a
  // first bucket of 0.5 ms held 97-99.98% of them.
  static constexpr std::array<double, 17> seconds = {
      0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
      0.01,    0.025,    0.05,    0.1,    0.25,    0.5,    1.0,   2.5};
  /// Batch sizes (requests or samples per execution), powers of two to 4,096.
  static constexpr std::array<double, 13> sizes = {1,   2,   4,   8,    16,   32,  64,
                                                   128, 256, 512, 1024, 2048, 4096};

  /// `unit`: the sum is kept in integer steps of 1/unit (ns for seconds; whole sizes).
  explicit histogram(std::span<const double> bounds = seconds, double unit = 1e9)
      : bounds_(bounds), unit_(unit), counts_(bounds.size() + 1) {}
  void observe(double value);
  /// Lines `<name>_bucket{<labels>,le="..."} n`, `_sum`, `_count`.
  void render(std::string& out, const std::string& name, const std::string& labels) const;
  /// Observations so far, and their sum in units (ns for the seconds histograms).
  std::uint64_t count() const;
  std::uint64_t sum_units() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::span<const double> bounds_;  // static arrays above
  double unit_;
  std::vector<std::atomic<std::uint64_t>> counts_;
  std::atomic<std::uint64_t> sum_{0};  // sum of observations x unit_
};

struct model_counters {
  std::atomic<std::uint64_t> requests{0}, ok{0}, overloaded{0}, deadline_exceeded{0},
      bad_request{0}, errors{0};
  /// Inferences answered ok: seeds of GNN calls, samples of recommendation calls
  /// (Triton's nv_inference_count; requests count calls).
  std::atomic<std::uint64_t> inferences{0};
  /// Batches run (Triton's nv_inference_exec_count) and their sizes: GNN batches
  /// in requests, recommendation calls in samples.
  std::atomic<std::uint64_t> executions{0};
  histogram batch_size{histogram::sizes, 1.0};
  /// Time requests waited in the batcher (Triton's queue duration), ok or not.
  std::atomic<std::uint64_t> queue_us{0};
  histogram latency;                                     // end to end, ok answers
  std::atomic<std::uint64_t> fail_count{0}, fail_ns{0};  // answers other than ok, and their time
  std::atomic<std::uint64_t> last_answer_ms{
      0};  // wall clock (ms since the epoch) of the last answer
  histogram batching, sampling, gathering, compute;  // per request (GNN)

  /// Counts one batch of `size` requests (or samples).
  void record_execution(std::uint64_t size);

  /// Counts an answer; ok answers also feed the latency samples.
  void record(transport::rpc::rpc_status s, double ms);
  /// The q-quantile of the ok latencies recorded since `since`, and how many.
  std::pair<double, std::size_t> tail_since(std::chrono::steady_clock::time_point since, double q);
  /// Counters, latency percentiles and the model's admission state.
  nlohmann::json json(const serving::admission_control& admission);
  /// Appends this model's samples to `families` (metric family -> its lines), so
  /// the caller can print each family as one group, as the text format requires.
  /// `stages`: also the per-stage histograms (GNN models have them; DLRMs do not).
  void render(std::map<std::string, std::string>& families, const std::string& model,
              const serving::admission_control& admission, bool stages) const;

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

/// A typed model's tables read from the parameter server (--type-table-pdb), by
/// node type: their counters, as Admin stats shows them.
nlohmann::json type_tables_json(const std::vector<nn::type_table_stats>& tables);
/// HELP and TYPE of the families render_type_tables writes.
const std::vector<std::array<const char*, 3>>& type_table_help();
/// Appends the counters of `model`'s tables read from the parameter server
/// (--type-table-pdb) to `families`, labelled by model and node type.
void render_type_tables(std::map<std::string, std::string>& families, const std::string& model,
                        const std::vector<nn::type_table_stats>& tables);

}  // namespace spindle::actors::detail
