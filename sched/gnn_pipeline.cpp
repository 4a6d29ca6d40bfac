#include "sched/gnn_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "core/checksum.hpp"
#include "graph/metrics.hpp"
#include "sched/pmc.hpp"
#include "sched/pmc_check.hpp"

namespace spindle::sched {
namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

gnn_pipeline::gnn_pipeline(const graph::dataset& ds, const nn::model& model,
                           const psgs_router& router, thread_pool& pool, feature_source features)
    : ds_(ds), model_(model), router_(router), pooled_(pool), source_(std::move(features)) {}

double summed_psgs(const graph::dataset& ds, const gnn_request& r) {
  double s = 0;
  for (auto v : r.seeds)
    if (v >= 0 && v < ds.num_nodes() && !ds.psgs().empty()) s += ds.psgs()[std::size_t(v)];
  return s;
}

double gnn_pipeline::psgs(const gnn_request& r) const { return summed_psgs(ds_, r); }

// Samples `r` and gathers its features into `features`.
expected<graph::sampled_subgraph> gnn_pipeline::prepare(const gnn_request& r,
                                                        graph::sampling_executor& ex,
                                                        std::vector<float>& features,
                                                        stage_times& t) {
  const auto& d = model_.desc();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> fanouts = ds_.metadata().fanouts;
  if (int(fanouts.size()) != d.layers) fanouts.assign(std::size_t(d.layers), 10);
  SPINDLE_ASSIGN_OR_RETURN(auto sub,
                           ex.sample(ds_.graph(), r.seeds, {fanouts, false, r.sampler_seed}));
  t.sample_s += since(t0);
  t0 = std::chrono::steady_clock::now();
  const std::int64_t n = sub.hop_end.back(), f = ds_.feature_dim();
  features.resize(std::size_t(n * f));
  if (source_) {
    SPINDLE_TRY(source_(sub.nodes, features.data()));
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      std::memcpy(features.data() + i * f, ds_.features().data() + sub.nodes[i] * f,
                  std::size_t(f) * 4);
  }
  t.gather_s += since(t0);
  return sub;
}

// The model over the sampled blocks into `out` (one row per requested seed).
status gnn_pipeline::forward(const graph::sampled_subgraph& sub, const gnn_request& r,
                             std::span<const float> features, nn::allocator& alloc,
                             std::vector<float>& out) const {
  const std::int64_t n = sub.hop_end.back(), f = ds_.feature_dim();
  std::vector<nn::block> blocks;
  for (int l = 0; l < sub.num_hops(); ++l) {
    auto b = sub.layer_block(l);
    blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
  }
  auto degree = nn::gcn_degrees(sub.indptr, sub.indices, n);
  SPINDLE_ASSIGN_OR_RETURN(
      auto y, model_.forward(alloc, blocks, degree,
                             nn::tensor::borrow(const_cast<float*>(features.data()), {n, f})));
  out.resize(r.seeds.size() * std::size_t(y.cols()));
  for (std::size_t s = 0; s < r.seeds.size(); ++s)
    std::memcpy(out.data() + s * y.cols(), y.row(sub.seed_local[s]), std::size_t(y.cols()) * 4);
  return status::ok();
}

status gnn_pipeline::run_one(const gnn_request& r, graph::sampling_executor& ex,
                             std::vector<float>& out, stage_times& t) {
  SPINDLE_ASSIGN_OR_RETURN(auto sub, prepare(r, ex, features_, t));
  const auto t0 = std::chrono::steady_clock::now();
  nn::heap_allocator alloc;
  SPINDLE_TRY(forward(sub, r, features_, alloc, out));
  t.compute_s += since(t0);
  return status::ok();
}

// With a compute gate (GNNSched): every request is sampled and gathered first,
// then the batch's forward passes run as ONE task of the device scheduler,
// one after another inside a buffer of the largest pass's PMC estimate
// (activations only: weights and inputs live elsewhere; safety factor 1.1).
void gnn_pipeline::run_gated(const std::vector<gnn_request>& batch, graph::sampling_executor& ex,
                             batch_result& res) {
  struct prepared {
    std::size_t index;
    graph::sampled_subgraph sub;
    std::vector<float> features;
  };
  std::vector<prepared> ready;
  std::uint64_t bytes = 4096;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!res.errors[i].is_ok()) continue;
    std::vector<float> features;
    auto sub = prepare(batch[i], ex, features, res.times);
    if (!sub) {
      res.errors[i] = sub.error();
      continue;
    }
    const auto est = estimate_pmc(gnn_graph(model_.desc(), block_sizes(*sub)));
    const std::uint64_t outside = est.weight_bytes + features.size() * 4;
    if (est.pmc_bytes > outside) bytes = std::max(bytes, est.pmc_bytes - outside);
    ready.push_back({i, std::move(*sub), std::move(features)});
  }
  if (ready.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto st = gate_(bytes, solo_s_ > 0 ? 2 * solo_s_ : 0.01, [&](std::span<std::byte> buffer) {
    for (auto& p : ready) {
      nn::buffer_allocator alloc(buffer);
      res.errors[p.index] = forward(p.sub, batch[p.index], p.features, alloc, res.outputs[p.index]);
    }
    return status::ok();
  });
  if (!st)
    for (auto& p : ready) res.errors[p.index] = st;
  const double took = since(t0);
  res.times.compute_s += took;
  solo_s_ = solo_s_ == 0 ? took : 0.9 * solo_s_ + 0.1 * std::min(took, 4 * solo_s_);
}

batch_result gnn_pipeline::run(const std::vector<gnn_request>& batch) {
  double total = 0;
  for (const auto& r : batch) total += psgs(r);
  return run(batch, router_.route(total));
}

batch_result gnn_pipeline::run(const std::vector<gnn_request>& batch,
                               psgs_router::choice executor) {
  batch_result res;
  res.outputs.resize(batch.size());
  res.errors.resize(batch.size());
  res.executor = executor;
  graph::sampling_executor& ex = res.executor == psgs_router::choice::small
                                     ? static_cast<graph::sampling_executor&>(inline_)
                                     : pooled_;
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].seeds.empty())
      res.errors[i] = make_error(errc::invalid_argument, "request {}: no seeds", i);
  if (gate_) {
    run_gated(batch, ex, res);
    return res;
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!res.errors[i].is_ok()) continue;
    if (auto st = run_one(batch[i], ex, res.outputs[i], res.times); !st) res.errors[i] = st;
  }
  return res;
}

std::vector<gnn_request> degree_requests(const graph::dataset& ds, std::size_t n) {
  auto p0 = graph::seed_probabilities(ds.graph(), config::parse_seed_distribution("degree"));
  std::discrete_distribution<std::int64_t> pick(p0->begin(), p0->end());
  std::mt19937_64 rng(1);
  std::vector<gnn_request> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {{pick(rng)}, i};
  return out;
}

answer_summary answer_all(gnn_pipeline& p, const std::vector<gnn_request>& requests,
                          std::size_t batch) {
  answer_summary out;
  std::vector<float> all;
  for (std::size_t i = 0; i < requests.size(); i += batch) {
    std::vector<gnn_request> b(requests.begin() + i,
                               requests.begin() + std::min(requests.size(), i + batch));
    auto res = p.run(b);
    for (std::size_t k = 0; k < b.size(); ++k) {
      if (!res.errors[k]) {
        if (out.failed_ids.empty()) out.first_error = res.errors[k].to_string();
        out.failed_ids.push_back(b[k].sampler_seed);
        continue;
      }
      ++out.answered;
      all.insert(all.end(), res.outputs[k].begin(), res.outputs[k].end());
    }
  }
  out.checksum = checksum(all.data(), all.size() * sizeof(float));
  return out;
}

expected<std::uint64_t> answer_checksum(gnn_pipeline& p, const std::vector<gnn_request>& requests,
                                        std::size_t batch) {
  auto sum = answer_all(p, requests, batch);
  if (!sum.failed_ids.empty())
    return make_error(errc::unavailable, "{} of {} requests failed; first: {}",
                      sum.failed_ids.size(), requests.size(), sum.first_error);
  return sum.checksum;
}

expected<std::uint64_t> answer_checksum_except(gnn_pipeline& p, std::vector<gnn_request> requests,
                                               const std::vector<std::uint64_t>& skip) {
  std::erase_if(requests, [&](const gnn_request& r) {
    return std::find(skip.begin(), skip.end(), r.sampler_seed) != skip.end();
  });
  return answer_checksum(p, requests);
}

}  // namespace spindle::sched
