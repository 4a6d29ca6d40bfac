// Feature-cache hits on a typed graph with FAP counted per edge type (as the
// typed sampler draws) beside the whole-row FAP of the same graph (the
// baseline, same run): each FAP ranks the rows, the top fraction is the hot
// tier, and batches of seeds of one node type are sampled with the typed
// sampler; a hit is a gathered row (a batch's unique sampled node) in the tier.
// Also each metric's mean PSGS of the seeds beside the sampled subgraphs' size.
//
//   usage: typed_fap_bench DATASET SEED_TYPE [FANOUTS=10,5] [BATCHES=400] [BATCH=64]
//   (DATASET: a typed dataset, e.g. `python3 bench/typed_served.py --graph-only DIR`)
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "bench_util.hpp"
#include "config/sampling.hpp"
#include "graph/dataset.hpp"
#include "graph/sampler.hpp"
#include "graph/typed_metrics.hpp"

namespace spindle::bench {
namespace {

std::vector<char> top_rows(const huge_array<double>& fap, double fraction) {
  std::vector<std::int64_t> order(fap.size());
  std::iota(order.begin(), order.end(), 0);
  const auto k = std::size_t(fraction * double(order.size()));
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                    [&](auto a, auto b) { return fap[std::size_t(a)] > fap[std::size_t(b)]; });
  std::vector<char> hot(fap.size(), 0);
  for (std::size_t i = 0; i < k; ++i) hot[std::size_t(order[i])] = 1;
  return hot;
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  if (argc < 3) {
    fmt::print(stderr, "usage: typed_fap_bench DATASET SEED_TYPE [FANOUTS] [BATCHES] [BATCH]\n");
    return 2;
  }
  auto ds = graph::dataset::open(argv[1]);
  if (!ds) return fmt::print(stderr, "{}\n", ds.error().message()), 1;
  const auto fanouts = *config::parse_fanouts(argc > 3 ? argv[3] : "10,5");
  const int batches = bench::arg_or(argc, argv, 4, 400), batch = bench::arg_or(argc, argv, 5, 64);
  auto t = ds->find_node_type(argv[2]);
  if (!t || !ds->graph().typed()) return fmt::print(stderr, "no typed node type {}\n", argv[2]), 1;
  const auto& type = ds->node_types()[std::size_t(*t)];
  const auto g = ds->graph();
  std::vector<double> p0(std::size_t(g.num_nodes), 0.0);
  for (auto v = type.offset; v < type.offset + type.count; ++v) p0[std::size_t(v)] = 1.0 / double(type.count);
  thread_pool pool(std::max<std::size_t>(1, available_cores() - 1), "bench-pool");
  auto t0 = std::chrono::steady_clock::now();
  auto typed = graph::compute_typed_metrics(g, graph::per_edge_type(fanouts, g.num_edge_types), p0, pool).value();
  const double typed_s = bench::seconds_since(t0);
  auto whole = g;
  whole.edge_types = {};  // the same rows, read as one edge type
  t0 = std::chrono::steady_clock::now();
  auto untyped = graph::compute_metrics(whole, fanouts, p0, pool).value();
  const double untyped_s = bench::seconds_since(t0);
  // The requests: batches of seeds of the type, sampled as served.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> pick(type.offset, type.offset + type.count - 1);
  graph::inline_executor ex;
  std::vector<std::vector<std::int64_t>> gathered;
  double sampled = 0, predicted_typed = 0, predicted_untyped = 0;
  for (int b = 0; b < batches; ++b) {
    std::vector<std::int64_t> seeds(static_cast<std::size_t>(batch));
    for (auto& s : seeds) {
      s = pick(rng);
      predicted_typed += typed.psgs[std::size_t(s)];
      predicted_untyped += untyped.psgs[std::size_t(s)];
    }
    auto sub = ex.sample(g, seeds, {fanouts, false, std::uint64_t(b)}).value();
    sampled += double(sub.num_edges()) + double(seeds.size());
    gathered.push_back(std::move(sub.nodes));
  }
  const double n = double(batches) * batch;
  fmt::print("{}: {} nodes, {} edges, {} edge types; seeds of '{}', fanouts {} per edge type, "
             "{} batches of {}\n", argv[1], g.num_nodes, g.num_edges(), g.num_edge_types,
             type.name, config::format_fanouts(fanouts), batches, batch);
  fmt::print("mean PSGS per seed: sampled {:.1f}, typed metrics {:.1f}, whole-row metrics {:.1f}\n",
             sampled / n, predicted_typed / n, predicted_untyped / n);
  fmt::print("metrics time: typed {:.2f} s, whole-row {:.2f} s\n", typed_s, untyped_s);
  fmt::print("{:>10} {:>16} {:>20} {:>8}\n", "hot tier", "hits, typed FAP", "hits, whole-row FAP", "ratio");
  for (double f : {0.01, 0.05, 0.1, 0.2}) {
    const auto hot_t = bench::top_rows(typed.fap, f), hot_u = bench::top_rows(untyped.fap, f);
    double all = 0, hit_t = 0, hit_u = 0;
    for (const auto& nodes : gathered)
      for (auto v : nodes) {
        all += 1;
        hit_t += hot_t[std::size_t(v)];
        hit_u += hot_u[std::size_t(v)];
      }
    fmt::print("{:>9.0f}% {:>15.1f}% {:>19.1f}% {:>7.2f}x\n", 100 * f, 100 * hit_t / all,
               100 * hit_u / all, hit_t / std::max(1.0, hit_u));
  }
  return 0;
}
