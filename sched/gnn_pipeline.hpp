// One GNN serving pipeline over a batch of requests (Quiver §4.2-4.3): route by
// summed PSGS to the inline or pooled sampler, sample k hops, gather the
// sampled nodes' features, run the model, and split the output per request.
// Records the time of each stage. Pure logic: actors call it, benchmarks call
// it directly to measure the actor tax. One pipeline per thread (it owns
// scratch buffers); the dataset, model and router are shared read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.hpp"
#include "graph/dataset.hpp"
#include "graph/sampler.hpp"
#include "nn/model.hpp"
#include "sched/psgs_router.hpp"

namespace spindle::sched {

struct gnn_request {
  std::vector<std::int64_t> seeds;
  std::uint64_t sampler_seed = 0;  // same seeds + sampler seed => same answer
};

struct stage_times {
  double sample_s = 0, gather_s = 0, compute_s = 0;
};

struct batch_result {
  std::vector<std::vector<float>> outputs;  // per request: seeds x out, row-major
  std::vector<status> errors;               // per request; ok when the output is valid
  stage_times times;
  psgs_router::choice executor = psgs_router::choice::small;
};

/// Fills `out` ([ids.size() x F] float32) with the feature rows of `ids`; the
/// default reads the dataset's own features, a cluster reader gathers from shards.
using feature_source = std::function<status(std::span<const std::int64_t> ids, float* out)>;

/// Summed PSGS of a request's seeds (0 for seeds out of range): what batchers
/// add up to close a batch at the router's point.
double summed_psgs(const graph::dataset& ds, const gnn_request& r);

class gnn_pipeline {
 public:
  /// `pool` backs the pooled executor; all references must outlive the pipeline.
  gnn_pipeline(const graph::dataset& ds, const nn::model& model, const psgs_router& router,
               thread_pool& pool, feature_source features = {});

  /// Summed PSGS of a request's seeds (0 for seeds out of range).
  double psgs(const gnn_request& r) const;
  /// Runs a batch. A request with a bad seed gets an error naming it; the others
  /// in the batch are answered. Each request is sampled with its own sampler seed,
  /// so its answer does not depend on which batch it rode in.
  batch_result run(const std::vector<gnn_request>& batch);
  /// Runs a batch on an executor another router chose (the coordinator's, for a
  /// batch sent to this process), instead of routing it here.
  batch_result run(const std::vector<gnn_request>& batch, psgs_router::choice executor);

  /// Where a batch's forward passes run: given the task's buffer size (the largest
  /// pass's PMC estimate, activations only: weights and inputs live elsewhere) and
  /// QoS target, the gate runs `work` inside such a buffer and returns its status
  /// (GNNSched's device scheduler; one task per batch). Unset: each pass on this
  /// thread with heap memory.
  using compute_gate = std::function<status(
      std::uint64_t bytes, double qos_s, const std::function<status(std::span<std::byte>)>& work)>;
  void set_compute_gate(compute_gate gate) { gate_ = std::move(gate); }

 private:
  status run_one(const gnn_request& r, graph::sampling_executor& ex, std::vector<float>& out,
                 stage_times& t);
  const graph::dataset& ds_;
  const nn::model& model_;
  const psgs_router& router_;
  graph::inline_executor inline_;
  graph::pooled_executor pooled_;
  expected<graph::sampled_subgraph> prepare(const gnn_request& r, graph::sampling_executor& ex,
                                            std::vector<float>& features, stage_times& t);
  status forward(const graph::sampled_subgraph& sub, const gnn_request& r,
                 std::span<const float> features, nn::allocator& alloc,
                 std::vector<float>& out) const;
  void run_gated(const std::vector<gnn_request>& batch, graph::sampling_executor& ex,
                 batch_result& res);
  feature_source source_;
  std::vector<float> features_;
  compute_gate gate_;
  double solo_s_ = 0;  // running mean of a forward pass alone: QoS target = 2x (GNNSched)
};

/// The workload generator's requests: `n` single-seed requests, seeds drawn by
/// out-degree (seed 1), sampler seed = request index. Deterministic.
std::vector<gnn_request> degree_requests(const graph::dataset& ds, std::size_t n);

/// Runs `requests` one batch of `batch` at a time and returns the XXH3 checksum of
/// all outputs in request order (how processes compare answers), or the first error.
expected<std::uint64_t> answer_checksum(gnn_pipeline& p, const std::vector<gnn_request>& requests,
                                        std::size_t batch = 16);

/// Like answer_checksum, but a failed request is counted and skipped: the checksum
/// covers the answered requests in order, and `failed_ids` lists the others.
struct answer_summary {
  std::size_t answered = 0;
  std::vector<std::uint64_t> failed_ids;  // sampler seeds of failed requests
  std::uint64_t checksum = 0;
  std::string first_error;
};
answer_summary answer_all(gnn_pipeline& p, const std::vector<gnn_request>& requests,
                          std::size_t batch = 16);
/// The checksum of `requests` minus `skip` (sampler seeds), all of which must succeed.
expected<std::uint64_t> answer_checksum_except(gnn_pipeline& p, std::vector<gnn_request> requests,
                                               const std::vector<std::uint64_t>& skip);

}  // namespace spindle::sched
