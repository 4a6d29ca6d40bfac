// Benchmark 2 of the workload metrics: PSGS + FAP precompute time for R-MAT scale 16..22
// (edge factor 16, fanouts 25,10, uniform p_0), beside same-run baselines: one
// random 8-byte gather per edge over a |V|-sized array (an SpMV's floor) on
// all cores, and the streaming read of indices.
#include <fmt/format.h>

#include <cstdlib>
#include <numeric>

#include "bench_util.hpp"
#include "graph/metrics.hpp"

namespace spindle::bench {
namespace {

// One gather sweep: for every edge j->u read x[u] (what a pull SpMV must do).
double gather_sweep_seconds(const graph::csr_view& g, thread_pool& pool) {
  std::vector<double> x(static_cast<std::size_t>(g.num_nodes), 1.0), y(x.size());
  auto t0 = std::chrono::steady_clock::now();
  pool.parallel_for(0, g.num_nodes, 1 << 14, [&](std::int64_t lo, std::int64_t hi, std::size_t) {
    for (std::int64_t j = lo; j < hi; ++j) {
      double s = 0;
      for (auto e = g.indptr[j]; e < g.indptr[j + 1]; ++e) s += x[g.indices32[e]];
      y[j] = s;
    }
  });
  double dt = seconds_since(t0);
  volatile double sink = y[0];
  (void)sink;
  return dt;
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  int max_scale = argc > 1 ? std::atoi(argv[1]) : 22;
  thread_pool pool(std::max<std::size_t>(1, available_cores() - 1), "bench-pool");
  fmt::print("PSGS+FAP precompute, R-MAT edge factor 16, fanouts 25,10, uniform p0, {} threads\n", pool.slots());
  fmt::print("{:>5} {:>10} {:>11} {:>10} {:>12} {:>14} {:>10}\n", "scale", "nodes", "edges", "seconds",
             "s/M edges", "gather sweep s", "ratio");
  for (int scale = 16; scale <= max_scale; scale += 2) {
    auto g = bench::rmat_graph(scale, 16, pool);
    auto v = g.view();
    std::vector<double> times, base;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      auto p0 = graph::seed_probabilities(v, {}).value();
      auto m = graph::compute_metrics(v, {25, 10}, p0, pool).value();
      times.push_back(bench::seconds_since(t0));
      base.push_back(bench::gather_sweep_seconds(v, pool));
    }
    double t = bench::percentile(times, 0.5), b = bench::percentile(base, 0.5);
    double medges = static_cast<double>(v.num_edges()) / 1e6;
    fmt::print("{:>5} {:>10} {:>11} {:>10.4f} {:>12.4f} {:>14.4f} {:>9.2f}x\n", scale, v.num_nodes,
               v.num_edges(), t, t / medges, b, t / b);
  }
  fmt::print("ratio = precompute time / one random-gather sweep over all edges (K=2 needs 2 sweeps + 1 pull)\n");
  return 0;
}
