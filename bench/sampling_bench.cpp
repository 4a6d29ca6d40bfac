// Benchmark 1 of the workload metrics: 2-hop [25,10] sampling on R-MAT scale 20 (edge
// factor 16), seeds drawn by out-degree, batch sizes 1..1024, inline and
// pooled executors: median/p99 latency per batch and sampled edges/s, beside
// this machine's random 4-byte read rate over an array the size of `indices`
// (same run). Target: edges/s per core at batch 1024 >= 25% of that rate.
#include <fmt/format.h>

#include <cstdlib>
#include <numeric>

#include "bench_util.hpp"
#include "graph/sampler.hpp"

namespace spindle::bench {
namespace {

std::vector<std::int64_t> degree_seeds(const graph::csr_view& g, std::size_t count, std::uint64_t seed) {
  std::vector<double> cdf(static_cast<std::size_t>(g.num_nodes));
  double total = 0;
  for (std::int64_t v = 0; v < g.num_nodes; ++v) cdf[v] = total += static_cast<double>(g.degree(v));
  std::vector<std::int64_t> out(count);
  std::uint64_t x = seed;
  for (auto& s : out) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = static_cast<double>(x >> 11) * 0x1.0p-53 * total;
    s = std::min<std::int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin(), g.num_nodes - 1);
  }
  return out;
}

struct result {
  double p50_us, p99_us, edges_per_s;
};

result run(graph::sampling_executor& ex, const graph::csr_view& g, std::size_t batch, double budget_s) {
  auto seeds = degree_seeds(g, batch * 4096, 7 + batch);
  std::vector<double> lat;
  double edges = 0, busy = 0;
  graph::sample_options o{{25, 10}, false, 0};
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; (seconds_since(start) < budget_s && i < 4096) || i < 20; ++i) {
    std::span<const std::int64_t> b(seeds.data() + (i % 4096) * batch, batch);
    o.seed = i;
    auto t0 = std::chrono::steady_clock::now();
    auto s = ex.sample(g, b, o);
    double dt = seconds_since(t0);
    lat.push_back(dt * 1e6);
    busy += dt;
    edges += static_cast<double>(s->num_edges());
  }
  double p50 = percentile(lat, 0.5), p99 = percentile(lat, 0.99);
  return {p50, p99, edges / busy};
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  int scale = argc > 1 ? std::atoi(argv[1]) : 20;
  double budget = argc > 2 ? std::atof(argv[2]) : 1.0;
  thread_pool pool(std::max<std::size_t>(1, available_cores() - 1), "bench-pool");
  auto g = bench::rmat_graph(scale, 16, pool);
  auto v = g.view();
  double rr = bench::random_read_rate(v.num_edges());
  fmt::print("2-hop [25,10] sampling, R-MAT scale {} ({} nodes, {} edges), seeds by out-degree\n", scale,
             v.num_nodes, v.num_edges());
  fmt::print("baseline: random 4-byte reads over {:.1f} MiB (indices-sized), 1 core: {:.1f} M/s\n",
             static_cast<double>(v.num_edges()) * 4 / (1 << 20), rr / 1e6);
  fmt::print("{:>8} {:>6} {:>11} {:>11} {:>13} {:>15} {:>14}\n", "executor", "batch", "p50 us", "p99 us",
             "edges/s (M)", "per core (M/s)", "vs rand read");
  graph::inline_executor inl;
  graph::pooled_executor pooled(pool);
  for (graph::sampling_executor* ex : {static_cast<graph::sampling_executor*>(&inl), static_cast<graph::sampling_executor*>(&pooled)}) {
    double cores = ex == &inl ? 1.0 : static_cast<double>(pool.slots());
    for (std::size_t batch : {1, 8, 64, 256, 1024}) {
      auto r = bench::run(*ex, v, batch, budget);
      double per_core = r.edges_per_s / cores;
      fmt::print("{:>8} {:>6} {:>11.1f} {:>11.1f} {:>13.2f} {:>15.2f} {:>13.1f}%\n", ex->name(), batch, r.p50_us,
                 r.p99_us, r.edges_per_s / 1e6, per_core / 1e6, 100 * per_core / rr);
    }
  }
  fmt::print("per core = edges/s / cores used (inline 1, pooled {}); target at batch 1024: >= 25%\n", pool.slots());
  return 0;
}
