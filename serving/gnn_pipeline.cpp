#include "serving/gnn_pipeline.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "core/checksum.hpp"
#include "graph/metrics.hpp"
#include "serving/edge_attr_rows.hpp"
#include "serving/typed_calls.hpp"

namespace spindle::serving {
namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GCN degrees (1 + sampled neighbours other than the node itself; nn::gcn_degrees)
// into `d`, reusing its capacity.
void gcn_degrees_into(const graph::sampled_subgraph& sub, std::vector<float>& d) {
  const std::int64_t n = sub.hop_end.back(), rows = std::int64_t(sub.indptr.size()) - 1;
  d.assign(std::size_t(n), 1.0f);
  for (std::int64_t v = 0; v < rows && v < n; ++v)
    for (std::int64_t e = sub.indptr[v]; e < sub.indptr[v + 1]; ++e) d[v] += sub.indices[e] != v;
}

// Each node's in-neighbour count without self edges in the whole graph: a stack
// model's GCNConv with norm = "graph" normalises by it (PyG's full-graph answer).
// Computed once per graph and shared by every pipeline and model over it.
std::shared_ptr<const std::vector<float>> graph_neighbour_counts(const graph::csr_view& g) {
  static std::mutex mu;
  static std::map<const std::int64_t*, std::weak_ptr<const std::vector<float>>> cache;
  std::lock_guard lock(mu);
  if (auto hit = cache[g.indptr.data()].lock()) return hit;
  auto n = std::make_shared<std::vector<float>>(std::size_t(g.num_nodes));
  graph::with_indices(g, [&](auto indices) {
    for (std::int64_t v = 0; v < g.num_nodes; ++v) {
      std::int64_t c = 0;
      for (std::int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) c += indices[e] != v;
      (*n)[std::size_t(v)] = float(c);
    }
  });
  cache[g.indptr.data()] = n;
  return n;
}
}  // namespace

std::uint64_t per_request_seed(std::span<const std::int64_t> seeds) {
  std::uint64_t h = 0x5350494e444c45ull;  // "SPINDLE"
  for (auto s : seeds) {  // splitmix64 over the seed ids, in order
    h += std::uint64_t(s) + 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
  }
  return h | 1;  // nonzero: a sampler seed
}

// GCNConv(normalize=True, add_self_loops=False) counts an existing i->i edge in
// PyG's degree, where Spindle's normalisation leaves self edges out of it: the
// two agree only on a graph without self-loops, so any other is refused.
static status check_self_loop_semantics(const config::model_desc& d, const graph::csr_view& g) {
  std::size_t op = 0;
  for (; op < d.ops.size(); ++op)
    if (config::is_gcn_normalised(d.ops[op].kind) && d.ops[op].normalize &&
        !d.ops[op].add_self_loops)
      break;
  if (op == d.ops.size()) return status::ok();
  std::int64_t loops = 0;
  for (std::int64_t v = 0; v < g.num_nodes; ++v)
    for (std::int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) loops += g.neighbour(e) == v;
  if (loops == 0) return status::ok();
  return make_error(errc::unsupported,
                    "{}: op {} ({}, add_self_loops = false) is served exactly only on a graph "
                    "without self-loops, and this one has {} (prepare --drop-self-loops)",
                    d.name, op, config::to_string(d.ops[op].kind), loops);
}

gnn_pipeline::gnn_pipeline(const graph::dataset& ds, const nn::model& model,
                           const psgs_router& router, thread_pool& pool, feature_source features,
                           std::shared_ptr<batch_executor> device)
    : ds_(ds),
      model_(model),
      router_(router),
      small_(nullptr),
      large_(&pool),
      device_(std::move(device)),
      pool_(pool),
      source_(std::move(features)),
      arena_(4u << 20) {
  if (auto f = served_fanouts(model_.desc(), ds_.metadata()))
    options_.fanouts = std::move(*f);
  else
    setup_error_ = f.error();  // every request is answered with it (loaders check first)
  if (auto map = relation_map(ds_, model_.desc())) {
    relation_of_type_ = std::move(*map);
    if (model_.desc().typed()) {
      options_.typed_fanouts = typed_fanouts(model_.desc(), relation_of_type_, options_.fanouts);
      model_type_of_ = model_node_types(ds_, model_.desc());
    }
  } else {
    setup_error_ = map.error();
  }
  per_request_ = model_.desc().sampling == "per_request";
  if (auto st = check_self_loop_semantics(model_.desc(), ds_.graph()); !st) setup_error_ = st;
  if (auto st = check_edge_attr(ds_, model_); !st) setup_error_ = st;
  options_.edge_ids = model_.needs_edge_attr();  // sampled on the host (their CSR positions)
  if (model_.desc().arch == config::model_arch::stack && model_.graph_degrees())
    graph_neighbours_ = graph_neighbour_counts(ds_.graph());
}

status gnn_pipeline::set_fanouts(std::vector<int> fanouts) {
  SPINDLE_TRY(config::validate_fanouts(fanouts, model_.desc().layers, "fanouts"));
  if (fanouts.empty())
    return make_error(errc::invalid_argument, "fanouts: one value per layer ({})",
                      model_.desc().layers);
  options_.fanouts = std::move(fanouts);
  if (model_.desc().typed())
    options_.typed_fanouts = typed_fanouts(model_.desc(), relation_of_type_, options_.fanouts);
  setup_error_ = check_edge_attr(ds_, model_);
  return status::ok();
}

std::uint64_t shared_graph_seed(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double summed_psgs(const graph::dataset& ds, const gnn_request& r) {
  if (ds.psgs().empty()) return 0;
  // A served graph that changes: the PSGS of changed and added nodes is the
  // delta's, the rest its base's (the dataset's, or a compacted one).
  const auto* live = ds.live();
  const auto d = live ? live->current() : nullptr;
  const auto base = d && d->base ? d->base->psgs() : ds.psgs();
  double s = 0;
  for (auto v : r.seeds) {
    if (d && !d->psgs.empty())
      if (const double* q = d->psgs.find(v)) {
        s += *q;
        continue;
      }
    if (v >= 0 && std::size_t(v) < base.size()) s += base[std::size_t(v)];
  }
  return s;
}

double gnn_pipeline::psgs(const gnn_request& r) const { return summed_psgs(ds_, r); }

void gnn_pipeline::gather_live(batch_executor& ex, const graph::graph_delta& d,
                               std::span<const std::int64_t> ids, float* out) {
  const std::int64_t f = ds_.feature_dim();
  const auto base = d.base ? d.base->features() : ds_.features();
  if (d.features.empty()) return ex.gather(base, f, ids, out);
  // Nodes past the base have no base row: gather row 0 in their place, then
  // overwrite every row the delta holds.
  live_ids_.assign(ids.begin(), ids.end());
  for (auto& v : live_ids_)
    if (v >= d.base_nodes) v = 0;
  ex.gather(base, f, live_ids_, out);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (const auto* row = d.features.find(ids[i]))
      std::copy((*row)->begin(), (*row)->end(), out + std::int64_t(i) * f);
}

// A cluster rank's rows (source_) read through a live graph's delta: nodes
// past the placed base read row 0 in their place, then every row the delta
// holds (set or added) is written over. A compacted base is never read
// through source_: cluster ranks do not compact (the tiers hold the base's rows).
status gnn_pipeline::gather_from_source(batch_executor& ex, bool rows_for_pass,
                                        const graph::graph_delta* d,
                                        std::span<const std::int64_t> ids, float* out) {
  if (!d || d->features.empty())  // a GPU executor may hold some rows (node --device cuda)
    return ex.gather_from(source_, ds_.feature_dim(), ids, out, rows_for_pass);
  live_ids_.assign(ids.begin(), ids.end());
  for (auto& v : live_ids_)
    if (v >= d->base_nodes) v = 0;
  SPINDLE_TRY(source_(live_ids_, out));
  const std::int64_t f = ds_.feature_dim();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (const auto* row = d->features.find(ids[i]))
      std::copy((*row)->begin(), (*row)->end(), out + std::int64_t(i) * f);
  return status::ok();
}

float gnn_pipeline::graph_degree(const graph::csr_view& graph, std::int64_t v) const {
  float base = 0;
  if (graph.delta && graph.delta->base) {  // a compacted base: its row, counted
    if (v < graph.num_nodes)
      for (std::int64_t e = graph.indptr[v]; e < graph.indptr[v + 1]; ++e)
        base += graph.neighbour(e) != v;
  } else if (v < ds_.num_nodes()) {
    base = (*graph_neighbours_)[std::size_t(v)];
  }
  return graph.delta ? graph::neighbour_count(graph, *graph.delta, v, base) : base;
}

batch_executor& gnn_pipeline::executor_for(psgs_router::choice c) {
  if (c == psgs_router::choice::small) return small_;
  // A typed graph is sampled on the host (the device draw takes one edge type).
  const bool device = device_ && !model_.desc().typed() && !options_.edge_ids;
  return device ? *device_ : static_cast<batch_executor&>(large_);
}

prepared_batch::group& gnn_pipeline::next_group(prepared_batch& pb) const {
  if (pb.used == pb.groups.size()) pb.groups.emplace_back();
  auto& g = pb.groups[pb.used++];
  g.members.clear();
  g.seeds.clear();
  g.ready = false;
  return g;
}

// Validates every request and sorts the valid ones into graphs: one shared by
// every request without a sampler seed, one per request with one; then samples
// and gathers each graph.
void gnn_pipeline::prepare_into(const std::vector<gnn_request>& batch, psgs_router::choice c,
                                prepared_batch& pb, bool rows_for_pass) {
  auto& res = pb.result;
  res.outputs.clear();
  res.outputs.resize(batch.size());
  res.errors.assign(batch.size(), status::ok());
  res.times = {};
  res.work = {};
  res.executor = c;
  pb.used = 0;
  // One version of a live graph for the whole batch: taken once, held until done.
  pb.delta = ds_.live() ? ds_.live()->current() : nullptr;
  const bool rebased = pb.delta && pb.delta->base;
  graph::csr_view graph = rebased ? pb.delta->base->graph() : ds_.graph();
  if (pb.delta && (rebased || !pb.delta->empty())) graph.delta = pb.delta.get();
  res.graph_version = pb.delta ? pb.delta->version : 0;
  // The shared graphs: one per node type asked (one in all for an untyped model).
  std::map<std::string, std::size_t> shared_of;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& r = batch[i];
    if (!setup_error_.is_ok()) {
      res.errors[i] = setup_error_;
      continue;
    }
    if (r.seeds.empty()) {
      res.errors[i] = make_error(errc::invalid_argument, "request {}: no seeds", i);
      continue;
    }
    if (auto st = graph::validate_seeds(graph, r.seeds); !st) {
      res.errors[i] = st;
      continue;
    }
    if (auto st = check_pairs(r.pairs, r.seeds.size(), model_.desc()); !st) {
      res.errors[i] = st;
      continue;
    }
    if (auto w = named_output_widths(r.outputs, r.pairs, r.seeds.size(), model_); !w) {
      res.errors[i] = std::move(w).error();
      continue;
    }
    std::size_t output = 0, pair_output = prepared_batch::kNoPairOutput;
    if (auto st = typed_request(r, pb.delta.get(), output, pair_output); !st) {
      res.errors[i] = st;
      continue;
    }
    const bool own = r.reproducible() || per_request_;
    const auto key = pair_output == prepared_batch::kNoPairOutput ? r.node_type : "\n(pairs)";
    if (!own && !shared_of.count(key)) {
      next_group(pb);
      shared_of[key] = pb.used - 1;
    }
    auto& g = own ? next_group(pb) : pb.groups[shared_of.at(key)];
    g.output = output;
    g.pair_output = pair_output;
    g.members.push_back(i);
    g.seeds.insert(g.seeds.end(), r.seeds.begin(), r.seeds.end());
  }
  auto& ex = executor_for(c);
  for (std::size_t k = 0; k < pb.used; ++k) {
    auto& g = pb.groups[k];
    const auto& first = batch[g.members.front()];
    const bool shared = std::any_of(shared_of.begin(), shared_of.end(),
                                    [&](const auto& kv) { return kv.second == k; });
    const std::uint64_t seed = shared                 ? shared_graph_seed(batches_++)
                               : first.reproducible() ? first.sampler_seed
                                                      : per_request_seed(first.seeds);
    if (auto st = prepare_group(g, graph, seed, ex, res, rows_for_pass); !st)
      for (auto m : g.members) res.errors[m] = st;
    else
      g.ready = true;
  }
}

status gnn_pipeline::prepare_group(prepared_batch::group& g, const graph::csr_view& graph,
                                   std::uint64_t sampler_seed, batch_executor& ex,
                                   batch_result& res, bool rows_for_pass) {
  auto t0 = std::chrono::steady_clock::now();
  options_.seed = sampler_seed;
  SPINDLE_TRY(ex.sample(graph, g.seeds, options_, g.sub));
  res.times.sample_s += since(t0);
  t0 = std::chrono::steady_clock::now();
  const auto& sub = g.sub;
  const std::int64_t n = sub.hop_end.back(), f = ds_.feature_dim();
  // Grown, never shrunk: the gather writes every row, and a resize back up
  // would zero the rows again first (1.1% of a loaded server's CPU). Readers
  // take the first n x f values.
  if (g.features.size() < std::size_t(n * f)) g.features.resize(std::size_t(n * f));
  if (source_)
    SPINDLE_TRY(gather_from_source(ex, rows_for_pass, graph.delta, sub.nodes, g.features.data()));
  else if (graph.delta)
    gather_live(ex, *graph.delta, sub.nodes, g.features.data());
  else if (rows_for_pass)  // a static graph, its pass next: the rows may stay on a GPU
    ex.gather_for_pass(ds_.features(), f, sub.nodes, g.features.data());
  else
    ex.gather(ds_.features(), f, sub.nodes, g.features.data());
  res.times.gather_s += since(t0);
  if (options_.edge_ids) gather_edge_attr(ds_, sub, g.edge_attr);
  const std::int64_t k = options_.edge_ids ? ds_.edge_attr_cols() : 0;
  g.blocks.clear();
  for (int l = 0; l < sub.num_hops(); ++l) {  // a block's edges are the first of sub's
    auto b = sub.layer_block(l);
    const auto attr = std::span<const float>(g.edge_attr).first(std::size_t(k) * b.indices.size());
    g.blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices, b.edge_types, attr, k});
  }
  if (model_.desc().typed())
    sampled_row_types(ds_, graph.delta, model_type_of_, sub.nodes, model_.has_type_embeddings(),
                      g.row_types, g.row_ids);
  if (model_.desc().arch == config::model_arch::gcn) gcn_degrees_into(sub, g.degree);
  if (model_.desc().arch == config::model_arch::stack && model_.needs_degrees()) {
    if (model_.graph_degrees()) {  // the graph's neighbour counts of the sampled nodes
      g.degree.resize(sub.nodes.size());
      for (std::size_t i = 0; i < sub.nodes.size(); ++i)
        g.degree[i] = graph_degree(graph, sub.nodes[i]);
    } else {  // the sampled subgraph's
      gcn_degrees_into(sub, g.degree);
      for (auto& d : g.degree) d -= 1.0f;
    }
  }
  res.work.graphs += 1;
  res.work.rows += std::uint64_t(n);
  res.work.edges += std::uint64_t(sub.num_edges());
  res.work.output_rows += std::uint64_t(sub.hop_end.front());
  return status::ok();
}

// The forward pass of one graph; each member's answer is read from its seeds' rows.
status gnn_pipeline::compute_group(const prepared_batch::group& g,
                                   const std::vector<gnn_request>& batch, batch_executor* ex,
                                   nn::allocator& alloc, batch_result& res,
                                   const gpu::pool_slot* device) const {
  const auto& sub = g.sub;
  const std::int64_t n = sub.hop_end.back(), f = ds_.feature_dim();
  auto x = nn::tensor::borrow(const_cast<float*>(g.features.data()), {n, f});
  const bool named = std::any_of(g.members.begin(), g.members.end(),
                                 [&](std::size_t m) { return !batch[m].outputs.empty(); });
  // Only the executor's own pass reads rows it kept on a GPU; the others, here.
  const bool executor_pass = !named && g.pair_output == prepared_batch::kNoPairOutput &&
                             !model_.desc().typed() && !device;
  if (ex && !executor_pass) SPINDLE_TRY(ex->host_rows(x.data()));
  if (named) return compute_named(g, batch, alloc, x, res);
  if (g.pair_output != prepared_batch::kNoPairOutput)
    return compute_typed_pairs(g, batch, alloc, x, res);
  // A typed model runs on the host, its ops restricted to their edge types.
  auto y = model_.desc().typed() ? model_.forward_typed(alloc, g.blocks, x, g.output, relation_of_type_,
                                                        g.row_types, g.row_ids)
  // A GNNSched device slot: the pass on the device, in the slot, on its stream.
           : device ? device_->forward_in(*device, model_, alloc, g.blocks, g.degree, x)
           : ex   ? ex->forward(model_, alloc, g.blocks, g.degree, x)
                  : model_.forward(alloc, g.blocks, g.degree, x);
  if (!y && device && !model_.desc().typed() && y.error().code() == errc::unsupported)  // no device layers (GAT)
    y = model_.forward(alloc, g.blocks, g.degree, x);
  if (!y) return std::move(y).error();
  std::size_t offset = 0;
  for (auto m : g.members) {
    const std::span<const std::int32_t> rows(sub.seed_local.data() + offset, batch[m].seeds.size());
    if (auto st = answer_rows(batch[m], *y, rows, res.outputs[m]); !st) res.errors[m] = st;
    offset += rows.size();
  }
  return status::ok();
}

void gnn_pipeline::compute(prepared_batch& pb, const std::vector<gnn_request>& batch,
                           gpu::pool_slot slot) const {
  const bool on_device = slot.stream != nullptr;
  for (std::size_t k = 0; k < pb.used; ++k) {
    const auto& g = pb.groups[k];
    if (!g.ready) continue;
    status st;
    if (on_device && !device_) {
      st = make_error(errc::internal, "a GPU pool's slot, but this pipeline has no GPU executor");
    } else if (on_device) {  // device memory is the slot; the answer's rows come back to the heap
      nn::heap_allocator host;
      st = compute_group(g, batch, nullptr, host, pb.result, &slot);
    } else {
      nn::buffer_allocator alloc(slot.memory);
      st = compute_group(g, batch, nullptr, alloc, pb.result);
    }
    if (!st)
      for (auto m : g.members) pb.result.errors[m] = st;
  }
}

void gnn_pipeline::record_pass(double took) {
  solo_s_ = solo_s_ == 0 ? took : 0.9 * solo_s_ + 0.1 * std::min(took, 4 * solo_s_);
}

// Quiver §4.2: the executor follows the batch's summed PSGS.
psgs_router::choice gnn_pipeline::route(const std::vector<gnn_request>& batch) const {
  double total = 0;
  for (const auto& r : batch) total += psgs(r);
  return router_.route(total);
}

batch_result gnn_pipeline::run(const std::vector<gnn_request>& batch) {
  return run(batch, route(batch));
}

// A fault inside the pipeline (a bug, memory running out) fails this batch's
// requests by name; the pipeline, and the model it serves, go on.
batch_result gnn_pipeline::run(const std::vector<gnn_request>& batch,
                               psgs_router::choice executor) {
  const auto busy = pool_.occupy();
  const bool pool_is_large = &executor_for(psgs_router::choice::large) == &large_;
  if (pool_is_large && router_.policy() != routing_policy::fixed)  // fixed: the one asked for
    executor = host_executor_while_busy(executor, pool_.occupied(), pool_.slots());
  try {
    return run_unguarded(batch, executor);
  } catch (const std::exception& e) {
    batch_result failed;
    failed.outputs.resize(batch.size());
    failed.errors.assign(batch.size(),
                         make_error(errc::internal, "the pipeline failed on this batch ({}); "
                                                    "later calls are served",
                                    e.what()));
    failed.executor = executor;
    return failed;
  }
}

batch_result gnn_pipeline::run_unguarded(const std::vector<gnn_request>& batch,
                                         psgs_router::choice executor) {
  auto& ex = executor_for(executor);
  // Rows a GPU kept for a pass that never came (an error, an exception) are
  // forgotten with the batch: their host buffers may be reused by the next.
  struct drop_rows_at_end {
    batch_executor& ex;
    ~drop_rows_at_end() { ex.drop_rows(); }
  } drop{ex};
  prepare_into(batch, executor, scratch_, true);
  auto& res = scratch_.result;
  for (std::size_t k = 0; k < scratch_.used; ++k) {
    const auto& g = scratch_.groups[k];
    if (!g.ready) continue;
    const auto t0 = std::chrono::steady_clock::now();
    arena_.reset();
    if (auto st = compute_group(g, batch, &ex, arena_, res); !st)
      for (auto m : g.members) res.errors[m] = st;
    res.times.compute_s += since(t0);
  }
  return std::move(res);
}

std::unique_ptr<prepared_batch> gnn_pipeline::prepare(const std::vector<gnn_request>& batch) {
  auto pb = std::make_unique<prepared_batch>();
  prepare_into(batch, route(batch), *pb);
  return pb;
}

}  // namespace spindle::serving
