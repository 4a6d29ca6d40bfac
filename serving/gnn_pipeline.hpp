// One GNN serving pipeline over a batch of requests (Quiver §4.2-4.3). The unit
// of work is the batch: the requests without a sampler seed are sampled as ONE
// computation graph (the union of their seeds, each frontier node expanded
// once, one block per layer: PyG NeighborLoader semantics over all the batch's
// seeds), their unique feature rows gathered once, and ONE forward pass run at
// the batch's size; each answer is read from its seeds' rows. A request with a
// sampler seed keeps the reproducible contract: it is sampled and run on its
// own, so its answer is the same bit for bit whatever batch it rides in.
// The summed PSGS routes the batch to the small or large executor. Records the
// time of each stage. Pure logic: actors call it, benchmarks call it directly.
// One pipeline per thread (it owns scratch reused across batches: no heap
// allocation per batch once warm, apart from the per-request answers); the
// dataset, model and router are shared read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.hpp"
#include "graph/dataset.hpp"
#include "graph/sampler.hpp"
#include "nn/arena.hpp"
#include "nn/model.hpp"
#include "serving/batch_executor.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::serving {

struct gnn_request {
  std::vector<std::int64_t> seeds;
  /// 0 (the default): the request shares its batch's jointly sampled graph, so
  /// its answer depends on the batch it rides in (as a NeighborLoader batch's
  /// does). Nonzero: sampled on its own with this seed; same seeds + same
  /// sampler seed => same answer, bit for bit.
  std::uint64_t sampler_seed = 0;
  /// seeds are pairs u0 v0 u1 v1 ... of a model with task "link": the answer is
  /// one score per pair (its decoder over the pair's rows), not the rows.
  bool pairs = false;
  /// Values of the model to answer instead of its output (stack models: op names,
  /// model::value_ops): the answer holds each one's seed rows, [seeds x width_k],
  /// one after another in this order. Computed on the host.
  std::vector<std::string> outputs;
  /// A typed model's call: the seeds' node type (the seeds are the graph's ids,
  /// each of that type: serving::to_graph_ids turns a call's numbers into them).
  std::string node_type;
  bool reproducible() const { return sampler_seed != 0; }
};

/// Field list for CAF's serializers (the UCX bridge carries requests between
/// processes); a template, so this header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gnn_request& x) {
  return f(x.seeds, x.sampler_seed, x.pairs, x.outputs, x.node_type);
}

struct stage_times {
  double sample_s = 0, gather_s = 0, compute_s = 0;
};

/// What one batch's work was: sampled graphs, rows gathered, forward passes.
struct batch_work {
  std::uint32_t graphs = 0;       // sampled computation graphs (1 per batch + 1 per seeded request)
  std::uint64_t rows = 0;         // unique feature rows gathered
  std::uint64_t edges = 0;        // sampled edges
  std::uint64_t output_rows = 0;  // rows of the last layer (unique seeds)
};

struct batch_result {
  std::vector<std::vector<float>> outputs;  // per request: seeds x out, row-major
  std::vector<status> errors;               // per request; ok when the output is valid
  stage_times times;
  batch_work work;
  psgs_router::choice executor = psgs_router::choice::small;
  std::uint64_t graph_version = 0;  // the live graph's version every request saw (0: static)
};

/// Field lists for CAF's inspectors (results cross actors); templates, so this
/// header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_times& x) {
  return f(x.sample_s, x.gather_s, x.compute_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_work& x) {
  return f(x.graphs, x.rows, x.edges, x.output_rows);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_result& x) {
  return f(x.outputs, x.errors, x.times, x.work, x.executor, x.graph_version);
}

// feature_source (where a cluster rank's rows come from): serving/batch_executor.hpp.

/// The sampler seed of the shared graph of a pipeline's `index`-th batch (SplitMix64),
/// so consecutive batches draw independent neighbours; exposed for tests.
std::uint64_t shared_graph_seed(std::uint64_t index);

/// A call's pairs (`seeds` node ids, u0 v0 u1 v1 ...) fit model `d` (task "link")
/// and come whole; ok when the call has no pairs. Errors say what to give.
status check_pairs(bool pairs, std::size_t seeds, const config::model_desc& d);
/// Named outputs a call may ask for, and the values an answer of them may hold
/// (seeds x their widths; a Cap'n Proto reply stays under its 64 MiB limit).
inline constexpr std::size_t kMaxNamedOutputs = 16;
inline constexpr std::uint64_t kMaxAnswerValues = std::uint64_t(1) << 23;
/// A call's named outputs exist in `m`, are distinct, at most kMaxNamedOutputs,
/// do not come with pairs, and with `seeds` make an answer of at most
/// kMaxAnswerValues; their widths, in order (empty without named outputs).
expected<std::vector<std::uint32_t>> named_output_widths(const std::vector<std::string>& outputs,
                                                         bool pairs, std::size_t seeds,
                                                         const nn::model& m);

/// Summed PSGS of a request's seeds (0 for seeds out of range): what batchers
/// add up to close a batch at the router's point.
double summed_psgs(const graph::dataset& ds, const gnn_request& r);

/// One batch after sampling and gathering, before its forward pass: owns its
/// graphs and features, so the pass may run later on another thread (GNNSched).
struct prepared_batch {
  static constexpr std::size_t kNoPairOutput = ~std::size_t(0);
  struct group {
    std::vector<std::size_t> members;  // request indices answered by this graph
    std::vector<std::int64_t> seeds;   // the members' seeds, concatenated
    graph::sampled_subgraph sub;
    std::vector<float> features;  // [sub.nodes x F] first; may be longer (reused, never shrunk)
    std::vector<nn::block> blocks;
    std::vector<float> degree;  // GCN only
    std::vector<float> edge_attr;  // models reading edge attributes: a row per sampled edge
    std::size_t output = 0;     // a typed model's output answering the members' node type
    std::size_t pair_output = kNoPairOutput;  // a typed link model's: its pairs' second ends'
    std::vector<std::int16_t> row_types;  // typed models: each sampled node's (model's) type
    std::vector<std::int64_t> row_ids;    // and its id within its type (embedding tables)
    bool ready = false;         // sampled and gathered; false: members hold the error
  };
  /// The live graph's delta this batch reads (one version for every request), or null.
  std::shared_ptr<const graph::graph_delta> delta;
  std::vector<group> groups;
  std::size_t used = 0;  // groups in use (the rest keep their capacity)
  batch_result result;
};

/// The fanouts a model is served with: its own (model.toml `fanouts`, or a
/// --fanouts override), else the dataset's when it has one per layer. Fails,
/// naming both, when neither fits the layer count (earlier releases).
expected<std::vector<int>> served_fanouts(const config::model_desc& model,
                                          const graph::dataset_metadata& ds);

class gnn_pipeline {
 public:
  /// `pool` backs the large executor; all references must outlive the pipeline.
  /// `device`, when given, is the large executor instead of the pool (Quiver:
  /// PSGS sends large batches to the GPU).
  gnn_pipeline(const graph::dataset& ds, const nn::model& model, const psgs_router& router,
               thread_pool& pool, feature_source features = {},
               std::shared_ptr<batch_executor> device = nullptr);

  /// Samples with `fanouts` (one per model layer) from the next batch on; fails,
  /// naming the values, otherwise. The pipeline's own thread only.
  status set_fanouts(std::vector<int> fanouts);
  const std::vector<int>& fanouts() const { return options_.fanouts; }

  /// Summed PSGS of a request's seeds (0 for seeds out of range).
  double psgs(const gnn_request& r) const;
  /// Runs a batch, routed by its summed PSGS. A request with a bad seed gets an
  /// error naming it; the others in the batch are answered.
  batch_result run(const std::vector<gnn_request>& batch);
  /// Runs a batch on an executor another router chose (the coordinator's, for a
  /// batch sent to this process), instead of routing it here. A batch for the
  /// host pool runs inline instead once every slot of the pool has a batch,
  /// this one included (host_executor_while_busy), unless this pipeline's
  /// router has the fixed policy.
  batch_result run(const std::vector<gnn_request>& batch, psgs_router::choice executor);

  /// Samples and gathers `batch` (routed by summed PSGS) into a new prepared batch.
  std::unique_ptr<prepared_batch> prepare(const std::vector<gnn_request>& batch);
  /// The served model, and the device executor when batches may run on a GPU
  /// (GNNSched sizes a task's memory from them: colocation/task_bytes.hpp).
  const nn::model& model() const { return model_; }
  const batch_executor* device() const { return device_.get(); }
  /// Runs the prepared batch's forward passes inside `slot` and fills its
  /// answers: a host slot is the passes' scratch memory; a device slot (a GPU
  /// pool's, with its own stream) runs them on the device executor, or on the
  /// host for a model without device layers. Thread-safe against this
  /// pipeline's other calls (touches only `pb` and the executor's forward_in).
  void compute(prepared_batch& pb, const std::vector<gnn_request>& batch,
               gpu::pool_slot slot) const;

  /// GNNSched's QoS target for this pipeline's tasks: 2 x the mean solo pass time.
  double qos_target() const { return solo_s_ > 0 ? 2 * solo_s_ : 0.01; }
  /// Feeds a pass's measured time into the QoS target's running mean.
  void record_pass(double seconds);

  /// The arena's system allocations so far (flat once warm: the hot path allocates nothing).
  std::uint64_t arena_allocations() const { return arena_.system_allocations(); }

 private:
  psgs_router::choice route(const std::vector<gnn_request>& batch) const;
  batch_executor& executor_for(psgs_router::choice c);
  batch_result run_unguarded(const std::vector<gnn_request>& batch, psgs_router::choice executor);
  status answer_rows(const gnn_request& r, const nn::tensor& y, std::span<const std::int32_t> rows,
                     std::vector<float>& out) const;
  status compute_named(const prepared_batch::group& g, const std::vector<gnn_request>& batch,
                       nn::allocator& alloc, const nn::tensor& x, batch_result& res) const;
  // `rows_for_pass`: the forward passes follow on this thread, through the
  // executor (run()), so a device executor may keep a static graph's rows on the GPU.
  void prepare_into(const std::vector<gnn_request>& batch, psgs_router::choice c,
                    prepared_batch& pb, bool rows_for_pass = false);
  // The output answering a typed request's seeds; for a typed link model's pairs,
  // `pair_output` is the pairs' second ends' (else kNoPairOutput).
  status typed_request(const gnn_request& r, const graph::graph_delta* delta, std::size_t& output,
                       std::size_t& pair_output) const;
  status compute_named_typed(const prepared_batch::group& g, const std::vector<gnn_request>& batch,
                             nn::allocator& alloc, const nn::tensor& x, batch_result& res) const;
  // A typed link model's pairs: both ends' outputs over one sampled graph, then the decoder.
  status compute_typed_pairs(const prepared_batch::group& g, const std::vector<gnn_request>& batch,
                             nn::allocator& alloc, const nn::tensor& x, batch_result& res) const;
  prepared_batch::group& next_group(prepared_batch& pb) const;
  status prepare_group(prepared_batch::group& g, const graph::csr_view& graph,
                       std::uint64_t sampler_seed, batch_executor& ex, batch_result& res,
                       bool rows_for_pass);
  // Feature rows of `ids` at a live graph's delta: the rows it set or added,
  // the base's for the rest.
  status gather_from_source(batch_executor& ex, bool rows_for_pass,
                            const graph::graph_delta* d, std::span<const std::int64_t> ids,
                            float* out);
  void gather_live(batch_executor& ex, const graph::graph_delta& d,
                   std::span<const std::int64_t> ids, float* out);
  // A node's neighbour count without self edges in `graph` (stack GCN, graph norm).
  float graph_degree(const graph::csr_view& graph, std::int64_t v) const;
  status compute_group(const prepared_batch::group& g, const std::vector<gnn_request>& batch,
                       batch_executor* ex, nn::allocator& alloc, batch_result& res,
                       const gpu::pool_slot* device = nullptr) const;

  const graph::dataset& ds_;
  const nn::model& model_;
  const psgs_router& router_;
  host_executor small_;
  host_executor large_;
  std::shared_ptr<batch_executor> device_;  // replaces large_ when set
  thread_pool& pool_;                       // large_'s: its occupancy decides host batches
  feature_source source_;
  graph::sample_options options_;  // the served fanouts; the seed is set per graph
  bool per_request_ = false;  // model sampling = "per_request": no shared batch graph
  std::shared_ptr<const std::vector<float>> graph_neighbours_;  // stack GCN, graph norm; else null
  status setup_error_;             // no usable fanouts: every request gets this
  std::vector<int> relation_of_type_;  // typed models: graph edge type -> the model's (-1)
  std::vector<std::int16_t> model_type_of_;  // typed models: graph node type -> the model's (-1)
  std::vector<std::int64_t> live_ids_;  // gather_live's base ids, reused across batches
  prepared_batch scratch_;         // reused by run()
  nn::arena_allocator arena_;
  std::uint64_t batches_ = 0;  // seeds the shared graph of each batch
  double solo_s_ = 0;          // running mean of a forward pass alone: QoS target = 2x (GNNSched)
};

/// The workload generator's requests: `n` single-seed requests, seeds drawn by
/// out-degree (seed 1). With `reproducible`, request i carries sampler seed i + 1
/// (its answer is fixed); otherwise none (requests share their batch's graph).
/// The sampler seed a call without one gets under sampling = "per_request": a
/// hash of its seed ids (nonzero), so the same call is sampled the same way.
std::uint64_t per_request_seed(std::span<const std::int64_t> seeds);

std::vector<gnn_request> degree_requests(const graph::dataset& ds, std::size_t n,
                                         bool reproducible = true);

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

}  // namespace spindle::serving
