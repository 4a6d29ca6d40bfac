// Graph updates on a typed graph beside the same updates on the untyped graph
// of the same topology (same run): batches of B new edges between random nodes,
// each applied as one batch (no log), and the time to sample every seed's two
// hops (every edge: the same edges on both) through the resulting delta, each
// the best of 5 alternating rounds (the machine is shared). A typed batch
// resolves its local ids and keeps each changed row sorted by (edge type, neighbour).
//     usage: typed_update_bench [NODES=1000000] [EDGES_PER_NODE=10] [BATCH=1000] [BATCHES=200]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <tuple>

#include "graph/live_graph.hpp"
#include "graph/sampler.hpp"

namespace spindle::bench {
namespace {

using clock_type = std::chrono::steady_clock;

struct lcg {
  std::uint64_t x = 42;
  std::uint64_t next(std::uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 20) % n;
  }
};

// Users [0, n/2), merchants [n/2, n); edge types: 0 (user, pays, merchant),
// 1 (merchant, rev_pays, user), 2 (user, knows, user). Rows in direction in,
// sorted by (type, neighbour).
graph::csr_graph typed_graph(std::int64_t n, std::int64_t per_node) {
  const std::int64_t half = n / 2;
  std::vector<std::tuple<std::int64_t, std::int16_t, std::int64_t>> e;  // (row, type, neighbour)
  lcg r;
  for (std::int64_t k = 0; k < n * per_node / 3; ++k) {
    const std::int64_t u = std::int64_t(r.next(std::uint64_t(half)));
    const std::int64_t m = half + std::int64_t(r.next(std::uint64_t(n - half)));
    e.emplace_back(m, 0, u);
    e.emplace_back(u, 1, m);
    e.emplace_back(u, 2, std::int64_t(r.next(std::uint64_t(half))));
  }
  std::sort(e.begin(), e.end());
  graph::csr_graph g;
  g.num_nodes = n;
  g.num_edge_types = 3;
  g.indptr.assign(std::size_t(n + 1), 0);
  for (const auto& [row, t, nb] : e) {
    ++g.indptr[std::size_t(row + 1)];
    g.indices32.push_back(std::int32_t(nb));
    g.edge_types.push_back(t);
  }
  for (std::int64_t v = 0; v < n; ++v) g.indptr[std::size_t(v + 1)] += g.indptr[std::size_t(v)];
  return g;
}

graph::live_graph_options typed_options(std::int64_t n) {
  graph::live_graph_options o;
  o.node_types = {{"user", 0, n / 2, 0}, {"merchant", n / 2, n - n / 2, 0}};
  o.edge_types = {{"user", "pays", "merchant", 0},
                  {"merchant", "rev_pays", "user", 0},
                  {"user", "knows", "user", 0}};
  return o;
}

// The same B edges (user u pays merchant m) as an untyped and as a typed batch.
std::pair<graph::graph_update, graph::graph_update> batch(std::int64_t n, int size, lcg& r) {
  graph::graph_update flat, typed;
  typed.add_typed.push_back({"user,pays,merchant", {}, {}, {}});
  for (int i = 0; i < size; ++i) {
    const std::int64_t u = std::int64_t(r.next(std::uint64_t(n / 2)));
    const std::int64_t m = std::int64_t(r.next(std::uint64_t(n - n / 2)));
    flat.add_src.push_back(u);
    flat.add_dst.push_back(n / 2 + m);
    typed.add_typed[0].src.push_back(u);
    typed.add_typed[0].dst.push_back(m);
  }
  return {flat, typed};
}

struct figures {
  double apply_us = 0, sample_ms = 0;
};

figures run(graph::live_graph& lg, const std::vector<graph::graph_update>& batches,
            const graph::csr_view& base, std::int64_t n) {
  figures f;
  auto t0 = clock_type::now();
  for (const auto& u : batches)
    if (auto r = lg.apply(u); !r) {
      fmt::print(stderr, "{}\n", r.error().to_string());
      std::exit(1);
    }
  f.apply_us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() /
               double(batches.size());
  graph::csr_view g = base;
  const auto d = lg.current();
  g.delta = d.get();
  std::vector<std::int64_t> seeds;
  for (std::int64_t i = 0; i < 1000; ++i) seeds.push_back(n / 2 + (i * 7919) % (n - n / 2));
  graph::inline_executor ex;
  t0 = clock_type::now();
  auto s = ex.sample(g, seeds, {{-1, -1}, false, 1});
  f.sample_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  if (!s) std::exit(1);
  return f;
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const std::int64_t per = argc > 2 ? std::atoll(argv[2]) : 10;
  const int size = argc > 3 ? std::atoi(argv[3]) : 1000;
  const int count = argc > 4 ? std::atoi(argv[4]) : 200;
  const graph::csr_graph typed = bench::typed_graph(n, per);
  graph::csr_graph plain = typed;
  plain.edge_types.clear();
  plain.num_edge_types = 0;
  std::vector<graph::graph_update> flat, typed_batches;
  bench::lcg r;
  for (int i = 0; i < count; ++i) {
    auto [f, t] = bench::batch(n, size, r);
    flat.push_back(std::move(f));
    typed_batches.push_back(std::move(t));
  }
  bench::figures u{1e30, 1e30}, t{1e30, 1e30};
  for (int round = 0; round < 5; ++round) {
    graph::live_graph untyped_lg(plain.view(), {});
    graph::live_graph typed_lg(typed.view(), bench::typed_options(n));
    const auto a = bench::run(untyped_lg, flat, plain.view(), n);
    const auto b = bench::run(typed_lg, typed_batches, typed.view(), n);
    u = {std::min(u.apply_us, a.apply_us), std::min(u.sample_ms, a.sample_ms)};
    t = {std::min(t.apply_us, b.apply_us), std::min(t.sample_ms, b.sample_ms)};
  }
  fmt::print("graph: {} nodes, {} edges; {} batches of {} added edges (no log), best of 5\n", n,
             typed.view().num_edges(), count, size);
  fmt::print("{:<34} {:>14} {:>14} {:>8}\n", "", "untyped", "typed", "ratio");
  fmt::print("{:<34} {:>14.1f} {:>14.1f} {:>8.2f}\n", "apply one batch (us)", u.apply_us,
             t.apply_us, t.apply_us / u.apply_us);
  fmt::print("{:<34} {:>14.2f} {:>14.2f} {:>8.2f}\n", "sample 1000 seeds, every edge (ms)",
             u.sample_ms, t.sample_ms, t.sample_ms / u.sample_ms);
  return 0;
}
