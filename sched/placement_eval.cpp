#include "sched/placement_eval.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "graph/sampler.hpp"

namespace spindle::sched {
namespace {

using config::link_kind;

struct reader {
  int server = 0;
  int device = -1;
};

std::vector<reader> readers_of(const config::topology& topo) {
  std::vector<reader> out;
  for (std::size_t s = 0; s < topo.servers.size(); ++s) {
    if (topo.servers[s].devices.empty()) out.push_back({int(s), -1});
    for (std::size_t d = 0; d < topo.servers[s].devices.size(); ++d)
      out.push_back({int(s), int(d)});
  }
  return out;
}

// For one reader: per class, the link of its nearest owner (classes are few).
std::vector<link_kind> nearest_links(const config::topology& topo, const placement_plan& plan,
                                     const reader& r) {
  std::vector<link_kind> out(plan.lookup.num_classes());
  for (std::size_t c = 0; c < out.size(); ++c) {
    double best = 1e300;
    for (const auto& o : plan.lookup.class_owners(c)) {
      const shard_info& sh = plan.shards[o.shard];
      double cost = link_to(topo, r.server, r.device, sh).cost_us(double(plan.row_bytes));
      if (cost < best) best = cost, out[c] = link_kind_to(topo, r.server, r.device, sh);
    }
  }
  return out;
}

// Request latency: the slowest link (latency + bytes / bandwidth), Quiver §5.2.
double request_latency(const config::topology& topo,
                       const std::array<std::uint64_t, config::kLinkKinds>& bytes) {
  double worst = 0;
  for (int k = 0; k < config::kLinkKinds; ++k)
    if (bytes[k] > 0) worst = std::max(worst, topo.links[k].cost_us(double(bytes[k])));
  return worst;
}

std::vector<double> cumulative(std::span<const double> p0) {
  std::vector<double> cdf(p0.size());
  std::partial_sum(p0.begin(), p0.end(), cdf.begin());
  return cdf;
}

}  // namespace

double eval_result::share(link_kind k) const {
  return rows == 0 ? 0.0 : double(rows_per_link[int(k)]) / double(rows);
}

expected<eval_result> evaluate_placement(const config::topology& topo, const placement_plan& plan,
                                         const graph::csr_view& g, std::span<const double> p0,
                                         const eval_options& options) {
  if (std::uint64_t(g.num_nodes) != plan.lookup.num_nodes())
    return make_error(errc::invalid_argument, "evaluate: plan has {} nodes, graph {}",
                      plan.lookup.num_nodes(), g.num_nodes);
  if (std::int64_t(p0.size()) != g.num_nodes)
    return make_error(errc::invalid_argument, "evaluate: p0 has {} entries, graph {} nodes",
                      p0.size(), g.num_nodes);
  if (options.requests == 0 || options.batch == 0)
    return make_error(errc::invalid_argument, "evaluate: requests and batch must be > 0");
  auto readers = readers_of(topo);
  std::vector<std::vector<link_kind>> nearest;
  for (const auto& r : readers) nearest.push_back(nearest_links(topo, plan, r));
  auto cdf = cumulative(p0);
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, cdf.back());
  graph::inline_executor sampler;
  graph::sample_options so{options.fanouts, false, options.seed};
  eval_result out;
  std::vector<std::int64_t> seeds(options.batch);
  for (std::size_t q = 0; q < options.requests; ++q) {
    for (auto& s : seeds)
      s = std::min<std::int64_t>(std::upper_bound(cdf.begin(), cdf.end(), unit(rng)) - cdf.begin(),
                                 g.num_nodes - 1);
    so.seed = options.seed + q;
    SPINDLE_ASSIGN_OR_RETURN(auto sub, sampler.sample(g, seeds, so));
    const auto& links = nearest[q % readers.size()];
    std::array<std::uint64_t, config::kLinkKinds> bytes{};
    for (std::int64_t v : sub.nodes) {
      int k = int(links[plan.lookup.class_of(std::uint64_t(v))]);
      bytes[k] += plan.row_bytes;
      ++out.rows_per_link[k];
    }
    for (int k = 0; k < config::kLinkKinds; ++k) out.bytes_per_link[k] += bytes[k];
    out.rows += sub.nodes.size();
    out.latency_us.push_back(request_latency(topo, bytes));
  }
  std::vector<double> sorted = out.latency_us;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) { return sorted[std::min(sorted.size() - 1, std::size_t(p * sorted.size()))]; };
  out.p50_us = pct(0.50);
  out.p99_us = pct(0.99);
  out.mean_us = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(sorted.size());
  return out;
}

}  // namespace spindle::sched
