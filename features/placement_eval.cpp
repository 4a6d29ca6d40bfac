#include "features/placement_eval.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "graph/sampler.hpp"

namespace spindle::features {
namespace {

using config::link_kind;

// Request latency: the slowest link (latency + bytes / bandwidth), Quiver §5.2.
double request_latency(const config::topology& topo,
                       const std::array<std::uint64_t, config::kLinkKinds>& bytes) {
  double worst = 0;
  for (int k = 0; k < config::kLinkKinds; ++k)
    if (bytes[k] > 0) worst = std::max(worst, topo.figures(link_kind(k)).cost_us(double(bytes[k])));
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
  auto readers = reader_sites(topo);
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
  auto pct = [&](double p) {
    return sorted[std::min(sorted.size() - 1, std::size_t(p * sorted.size()))];
  };
  out.p50_us = pct(0.50);
  out.p99_us = pct(0.99);
  out.mean_us = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(sorted.size());
  return out;
}

}  // namespace spindle::features
