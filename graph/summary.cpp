#include "graph/summary.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace spindle::graph {
namespace {

// Nearest-rank percentile of a sorted vector.
template <class T>
double percentile(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(rank, sorted.size() - 1)]);
}

double top_share(std::vector<double> v, double fraction) {
  double total = std::accumulate(v.begin(), v.end(), 0.0);
  if (total <= 0 || v.empty()) return 0;
  auto k = std::max<std::size_t>(1, static_cast<std::size_t>(fraction * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k - 1), v.end(), std::greater<>());
  return std::accumulate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), 0.0) / total;
}

}  // namespace

dataset_summary summarize(const dataset& d) {
  dataset_summary s;
  const auto& g = d.graph();
  s.num_nodes = g.num_nodes;
  s.num_edges = g.num_edges();
  s.feature_dim = d.feature_dim();
  s.num_classes = d.metadata().num_classes;
  std::vector<std::int64_t> deg(static_cast<std::size_t>(g.num_nodes));
  for (std::int64_t v = 0; v < g.num_nodes; ++v) s.isolated_nodes += (deg[v] = g.degree(v)) == 0;
  std::sort(deg.begin(), deg.end());
  s.degree_p50 = percentile(deg, 0.5);
  s.degree_p90 = percentile(deg, 0.9);
  s.degree_p99 = percentile(deg, 0.99);
  s.degree_max = deg.empty() ? 0 : static_cast<double>(deg.back());
  s.degree_mean = g.num_nodes ? static_cast<double>(s.num_edges) / static_cast<double>(g.num_nodes) : 0;
  if (!d.has_metrics()) return s;
  s.has_metrics = true;
  s.fanouts = config::format_fanouts(d.metadata().fanouts);
  s.seed_distribution = d.metadata().seed_distribution;
  if (!d.metadata().seed_node_types.empty())  // a typed graph's seeds of some types only
    s.seed_distribution += fmt::format(" of {}", fmt::join(d.metadata().seed_node_types, ", "));
  if (d.typed()) s.seed_distribution += ", sampled per edge type";
  std::vector<double> q(d.psgs().begin(), d.psgs().end());
  std::sort(q.begin(), q.end());
  s.psgs_p50 = percentile(q, 0.5);
  s.psgs_p99 = percentile(q, 0.99);
  s.psgs_max = q.empty() ? 0 : q.back();
  std::vector<double> p(d.fap().begin(), d.fap().end());
  s.expected_visits_per_request = std::accumulate(p.begin(), p.end(), 0.0);
  s.fap_top1_share = top_share(p, 0.01);
  s.fap_top10_share = top_share(std::move(p), 0.10);
  return s;
}

std::string format_table(const dataset_summary& s) {
  std::string out;
  auto row = [&](std::string_view k, const std::string& v) { out += fmt::format("  {:<30} {}\n", k, v); };
  row("nodes", fmt::format("{}", s.num_nodes));
  row("edges", fmt::format("{}", s.num_edges));
  row("feature dim", fmt::format("{}", s.feature_dim));
  if (s.num_classes) row("classes", fmt::format("{}", s.num_classes));
  row("out-degree mean", fmt::format("{:.2f}", s.degree_mean));
  row("out-degree p50/p90/p99/max", fmt::format("{:.0f} / {:.0f} / {:.0f} / {:.0f}", s.degree_p50,
                                                s.degree_p90, s.degree_p99, s.degree_max));
  row("nodes with out-degree 0", fmt::format("{}", s.isolated_nodes));
  if (!s.has_metrics) {
    row("metrics", "not computed (run `spindle prepare DIR`)");
    return out;
  }
  row("metrics for", fmt::format("fanouts {}, seeds {}", s.fanouts, s.seed_distribution));
  row("PSGS p50/p99/max", fmt::format("{:.1f} / {:.1f} / {:.1f}", s.psgs_p50, s.psgs_p99, s.psgs_max));
  row("FAP mass in top 1% / 10%", fmt::format("{:.1f}% / {:.1f}%", 100 * s.fap_top1_share, 100 * s.fap_top10_share));
  row("expected visits per request", fmt::format("{:.2f}", s.expected_visits_per_request));
  return out;
}

std::string format_json(const dataset_summary& s, const dataset_metadata& m) {
  nlohmann::json j{{"name", m.name}, {"source", m.source}, {"num_nodes", s.num_nodes},
                   {"num_edges", s.num_edges}, {"feature_dim", s.feature_dim},
                   {"num_classes", s.num_classes}, {"isolated_nodes", s.isolated_nodes},
                   {"degree", {{"mean", s.degree_mean}, {"p50", s.degree_p50}, {"p90", s.degree_p90},
                               {"p99", s.degree_p99}, {"max", s.degree_max}}}};
  if (s.has_metrics)
    j["metrics"] = {{"fanouts", m.fanouts}, {"seed_distribution", m.seed_distribution},
                    {"seed_node_types", m.seed_node_types},
                    {"psgs", {{"p50", s.psgs_p50}, {"p99", s.psgs_p99}, {"max", s.psgs_max}}},
                    {"fap_top1_share", s.fap_top1_share}, {"fap_top10_share", s.fap_top10_share},
                    {"expected_visits_per_request", s.expected_visits_per_request},
                    {"hop_mass", m.hop_mass}};
  for (const auto& t : m.node_types)
    j["node_types"].push_back({{"name", t.name}, {"count", t.count}, {"feature_dim", t.feature_dim}});
  for (const auto& t : m.edge_types)
    j["edge_types"].push_back({{"src", t.src}, {"rel", t.rel}, {"dst", t.dst}, {"count", t.count}});
  return j.dump(2);
}

std::string format_types(const dataset_metadata& m) {
  if (!m.typed()) return "";
  std::string out = fmt::format("  {} node types (name, nodes, feature width):\n", m.node_types.size());
  for (const auto& t : m.node_types)
    out += fmt::format("    {:<28} {:>12} {:>6}\n", t.name, t.count, t.feature_dim);
  out += fmt::format("  {} edge types (src, rel, dst, edges; id order):\n", m.edge_types.size());
  for (const auto& t : m.edge_types)
    out += fmt::format("    {:<44} {:>12}\n", fmt::format("({}, {}, {})", t.src, t.rel, t.dst),
                       t.count);
  return out;
}

}  // namespace spindle::graph
