// Where a served batch's time goes (the batched core): GraphSAGE
// 128-256-47, [25,10] on a prepared dataset, single-seed requests without
// sampler seeds, the direct pipeline on the small executor (one thread). Per
// batch size: seeds/s and the per-seed time of each stage, with the batch's
// unique rows and edges. Then, at batch 64, each stage beside its same-run
// limit on this machine: sampled edges/s vs independent random reads/s;
// gathered GB/s vs a copy of uniformly random rows of the whole table (cold:
// the served batches beat it where hot rows stay cached) and streaming memcpy;
// aggregation's read GB/s vs that same random-row copy; GEMM GFLOP/s vs
// OpenBLAS sgemm at the same shapes and at 1024^3.
//   usage: batch_breakdown DATASET_DIR [BATCHES=60]
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "bench/bench_util.hpp"
#include "core/progress.hpp"
#include "graph/metrics.hpp"
#include "nn/ops.hpp"
#include "serving/gnn_pipeline.hpp"

using namespace spindle;

namespace {

using clk = std::chrono::steady_clock;

std::vector<serving::gnn_request> draw(const graph::dataset& ds, std::size_t n, std::uint64_t seed,
                                     bool own_graphs = false) {
  auto p0 = graph::seed_probabilities(ds.graph(), config::parse_seed_distribution("degree"));
  std::discrete_distribution<std::int64_t> pick(p0->begin(), p0->end());
  std::mt19937_64 rng(seed);
  std::vector<serving::gnn_request> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {{pick(rng)}, own_graphs ? i + 1 : 0};
  return out;
}

struct stage_row {
  double seeds_per_s = 0, sample_us = 0, gather_us = 0, compute_us = 0, rows = 0, edges = 0;
};

stage_row run_batches(serving::gnn_pipeline& p, const graph::dataset& ds, std::size_t batch,
                      int batches, bool own_graphs = false) {
  auto reqs = draw(ds, batch * std::size_t(batches + 3), batch, own_graphs);
  stage_row r;
  serving::stage_times t;
  for (int b = 0; b < 3; ++b)  // warm up
    p.run({reqs.begin() + b * batch, reqs.begin() + (b + 1) * batch},
          serving::psgs_router::choice::small);
  const auto t0 = clk::now();
  for (int b = 3; b < batches + 3; ++b) {
    auto res = p.run({reqs.begin() + b * batch, reqs.begin() + (b + 1) * batch},
                     serving::psgs_router::choice::small);
    t.sample_s += res.times.sample_s, t.gather_s += res.times.gather_s;
    t.compute_s += res.times.compute_s;
    r.rows += double(res.work.rows), r.edges += double(res.work.edges);
  }
  const double seeds = double(batch) * batches;
  r.seeds_per_s = seeds / bench::seconds_since(t0);
  r.sample_us = t.sample_s / seeds * 1e6, r.gather_us = t.gather_s / seeds * 1e6;
  r.compute_us = t.compute_s / seeds * 1e6;
  r.rows /= batches, r.edges /= batches;
  return r;
}

// Streaming memcpy GB/s (single thread), and the copy of `ids`' rows (in
// address order) from `table`: the limits a gather faces.
double memcpy_gbs() {
  std::vector<char> a(256u << 20, 1), b(256u << 20);
  std::memcpy(b.data(), a.data(), a.size());
  int reps = 0;
  const auto t0 = clk::now();
  while (bench::seconds_since(t0) < 0.5) std::memcpy(b.data(), a.data(), a.size()), ++reps;
  return double(reps) * double(a.size()) / bench::seconds_since(t0) / 1e9;
}

double random_rows_gbs(std::span<const float> table, std::int64_t dim,
                       std::vector<std::int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  std::vector<float> out(ids.size() * std::size_t(dim));
  int reps = 0;
  const auto t0 = clk::now();
  while (bench::seconds_since(t0) < 0.3) {
    for (std::size_t i = 0; i < ids.size(); ++i)
      std::memcpy(out.data() + i * dim, table.data() + ids[i] * dim, std::size_t(dim) * 4);
    ++reps;
  }
  return double(reps) * double(out.size()) * 4 / bench::seconds_since(t0) / 1e9;
}

template <class Fn>
double time_reps(Fn&& fn, double min_s = 0.3) {
  int reps = 0;
  const auto t0 = clk::now();
  while (bench::seconds_since(t0) < min_s) fn(), ++reps;
  return bench::seconds_since(t0) / reps;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fmt::print(stderr, "usage: batch_breakdown DATASET_DIR [BATCHES]\n"), 2;
  const int batches = argc > 2 ? std::atoi(argv[2]) : 60;
  set_progress_enabled(false);
  nn::set_blas_threads(1);
  auto ds = graph::dataset::open(argv[1]);
  if (!ds) return fmt::print(stderr, "{}\n", ds.error().to_string()), 1;
  ds->warm_features();
  config::model_desc d;
  d.arch = config::model_arch::graphsage;
  d.in = int(ds->feature_dim()), d.hidden = 256, d.out = 47;
  const auto mdir = (std::filesystem::temp_directory_path() / "spindle-breakdown-model").string();
  if (auto st = nn::init_model(d, 1, mdir); !st)
    return fmt::print(stderr, "{}\n", st.to_string()), 1;
  nn::heap_allocator weights;
  auto model = nn::model::load(mdir, weights);
  thread_pool pool(1, "bench");
  serving::psgs_router router(serving::psgs_calibration{}, serving::routing_policy::fixed);
  serving::gnn_pipeline p(*ds, *model, router, pool);
  fmt::print("{}: GraphSAGE {}-256-47 [25,10], direct pipeline, small executor, 1 thread\n",
             argv[1], d.in);
  fmt::print("{:>6} | {:>9} | {:>9} {:>9} {:>10} | {:>8} {:>9}\n", "batch", "seeds/s", "sample us",
             "gather us", "forward us", "rows", "edges");
  for (std::size_t b : {1, 16, 64, 256}) {
    auto r = run_batches(p, *ds, b, b == 1 ? batches * 8 : batches);
    fmt::print("{:>6} | {:>9.0f} | {:>9.1f} {:>9.1f} {:>10.1f} | {:>8.0f} {:>9.0f}\n", b,
               r.seeds_per_s, r.sample_us, r.gather_us, r.compute_us, r.rows, r.edges);
  }
  // What sharing one graph per batch changes, same run, same seeds: requests
  // with a sampler seed each get their own graph (the path every request took
  // before the batched core).
  const auto shared = run_batches(p, *ds, 64, batches);
  const auto own = run_batches(p, *ds, 64, batches, true);
  fmt::print(
      "\nbatch 64, same seeds: one shared graph {:.0f} seeds/s, {:.0f} rows gathered; one "
      "graph per request {:.0f} seeds/s, {:.0f} rows ({:.2f}x the throughput, {:.2f}x "
      "fewer rows)\n",
      shared.seeds_per_s, shared.rows, own.seeds_per_s, own.rows,
      shared.seeds_per_s / own.seeds_per_s, own.rows / shared.rows);

  // Batches of 64, stage by stage (each stage over 20 different batches, so
  // caches are as cold as when serving), beside the machine's limits.
  constexpr int kBatches = 20;
  graph::inline_executor ex;
  graph::sample_options o{{25, 10}, false, 3};
  std::vector<graph::sampled_subgraph> subs(kBatches);
  std::vector<std::vector<std::int64_t>> seeds(kBatches);
  for (int i = 0; i < kBatches; ++i)
    for (const auto& r : draw(*ds, 64, 100 + std::uint64_t(i))) seeds[i].push_back(r.seeds[0]);
  auto t0 = clk::now();
  double edges = 0, rows = 0;
  for (int i = 0; i < kBatches; ++i) (void)ex.sample_into(ds->graph(), seeds[i], o, subs[i]);
  const double sample_s = bench::seconds_since(t0) / kBatches;
  for (const auto& sub : subs) edges += double(sub.num_edges()), rows += double(sub.nodes.size());
  const std::int64_t f = ds->feature_dim();
  serving::host_executor small;
  std::vector<std::vector<float>> xs(kBatches);
  for (int i = 0; i < kBatches; ++i) xs[i].resize(subs[i].nodes.size() * std::size_t(f));
  t0 = clk::now();
  for (int i = 0; i < kBatches; ++i) small.gather(ds->features(), f, subs[i].nodes, xs[i].data());
  const double gather_s = bench::seconds_since(t0) / kBatches;
  nn::heap_allocator a;
  double agg_s = 0, gemm_s = 0, flops = 0, agg_bytes = 0, dst0 = 0;
  for (int i = 0; i < kBatches; ++i) {
    const auto& sub = subs[i];
    const auto n = std::int64_t(sub.nodes.size());
    auto in = nn::tensor::borrow(xs[i].data(), {n, f});
    nn::tensor h;
    for (int l = 0; l < 2; ++l) {  // as the model runs them: aggregation, then lin_l and lin_r
      auto bv = sub.layer_block(l);
      nn::block b{bv.num_dst, bv.num_src, bv.indptr, bv.indices};
      const auto& x = l == 0 ? in : h;
      const std::int64_t k = x.cols(), out = l == 0 ? 256 : 47;
      auto t1 = clk::now();
      auto agg = nn::propagate(a, b, x, nn::reduce_op::mean).value();
      agg_s += bench::seconds_since(t1);
      agg_bytes += double(b.num_edges()) * double(k) * 4;
      std::vector<float> w(std::size_t(out * k), 0.01f);
      t1 = clk::now();
      auto y = nn::linear(a, agg, w, {}, out).value();
      (void)nn::linear_accumulate(y, x.head(b.num_dst), w);
      gemm_s += bench::seconds_since(t1);
      flops += 2 * 2.0 * double(b.num_dst) * double(k) * double(out);
      if (l == 0) dst0 += double(b.num_dst);
      h = std::move(y);
    }
  }
  agg_s /= kBatches, gemm_s /= kBatches, flops /= kBatches, agg_bytes /= kBatches;
  std::vector<float> big(1024 * 1024, 0.5f);
  auto bigx = nn::tensor::borrow(big.data(), {1024, 1024});
  const double peak =
      2.0 * 1024 * 1024 * 1024 / time_reps([&] { (void)nn::linear(a, bigx, big, {}, 1024); });
  std::vector<float> w0(256 * std::size_t(f), 0.01f);
  std::vector<float> shaped(std::size_t(dst0 / kBatches) * std::size_t(f), 0.5f);
  auto shaped_x = nn::tensor::borrow(shaped.data(), {std::int64_t(dst0 / kBatches), f});
  const double at_shape = 2.0 * double(shaped_x.rows()) * double(f) * 256 /
                          time_reps([&] { (void)nn::linear(a, shaped_x, w0, {}, 256); });
  const double reads = bench::random_read_rate(std::int64_t(ds->graph().num_edges()));
  // 256K random rows of the whole table (128 MB at 128 floats): beyond the caches.
  std::vector<std::int64_t> all(262144);
  std::mt19937_64 pick_rows(5);
  for (auto& v : all) v = std::int64_t(pick_rows() % std::uint64_t(ds->num_nodes()));
  const double rows_gbs = random_rows_gbs(ds->features(), f, all);
  const double mem = memcpy_gbs();
  const std::int64_t n = std::int64_t(rows / kBatches);
  const double per = 1e6 / 64;
  fmt::print(
      "\nbatch 64 (mean of {} batches): {} unique rows, {:.0f} sampled edges, layer-0 GEMM "
      "{:.0f} x {} x 256\n",
      kBatches, n, edges / kBatches, dst0 / kBatches, f);
  fmt::print("{:<12} | {:>8} | {:<28} | {}\n", "stage", "us/seed", "achieved", "same-run limit");
  fmt::print("{:<12} | {:>8.1f} | {:>10.1f} M edges/s         | {:.1f} M random reads/s\n",
             "sampling", sample_s * per, edges / kBatches / sample_s / 1e6, reads / 1e6);
  fmt::print(
      "{:<12} | {:>8.1f} | {:>10.2f} GB/s gathered      | {:.2f} GB/s random-row copy, "
      "{:.2f} GB/s memcpy\n",
      "gather", gather_s * per, double(n * f * 4) / gather_s / 1e9, rows_gbs, mem);
  fmt::print("{:<12} | {:>8.1f} | {:>10.2f} GB/s rows read     | {:.2f} GB/s random-row copy\n",
             "aggregation", agg_s * per, agg_bytes / agg_s / 1e9, rows_gbs);
  fmt::print(
      "{:<12} | {:>8.1f} | {:>10.1f} GFLOP/s            | {:.1f} GFLOP/s sgemm at the "
      "layer-0 shape, {:.1f} at 1024^3\n",
      "GEMM", gemm_s * per, flops / gemm_s / 1e9, at_shape / 1e9, peak / 1e9);
  return 0;
}
