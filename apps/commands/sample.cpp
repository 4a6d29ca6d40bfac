// `spindle sample`: sample one batch from a dataset and show the result, so
// users see exactly what the sampler hands to GNN layers.
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

#include "apps/commands/command.hpp"
#include "config/sampling.hpp"
#include "graph/dataset.hpp"
#include "graph/sampler.hpp"

namespace spindle::apps {
namespace {

struct sample_args {
  std::string dir, seeds, fanouts = "25,10", executor = "inline";
  std::uint64_t seed = 0;
  bool weighted = false, json = false, per_seed = false;
  int max_rows = 20;
};

expected<std::vector<std::int64_t>> parse_seed_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::string_view item = rest.substr(0, rest.find(','));
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || p != item.data() + item.size())
      return make_error(errc::invalid_argument, "--seeds: '{}' is not a node id", item);
    out.push_back(v);
    rest.remove_prefix(std::min(rest.size(), item.size() + 1));
  }
  if (out.empty()) return make_error(errc::invalid_argument, "--seeds: no node ids given");
  return out;
}

std::string to_json(const graph::sampled_subgraph& s, double micros) {
  nlohmann::json j{{"nodes", s.nodes},    {"hop_end", s.hop_end}, {"seed_local", s.seed_local},
                   {"indptr", s.indptr},  {"indices", s.indices}, {"num_edges", s.num_edges()},
                   {"latency_us", micros}};
  return j.dump();
}

void print_text(const graph::sampled_subgraph& s, double micros, int max_rows) {
  fmt::print("sampled {} nodes, {} edges in {:.1f} us\n", s.nodes.size(), s.num_edges(), micros);
  for (int k = 1; k <= s.num_hops(); ++k)
    fmt::print("  hop {}: expanded {} nodes, sampled {} edges, {} new nodes\n", k,
               s.hop_end[k - 1] - s.hop_begin(k), s.hop_edges(k), s.hop_end[k] - s.hop_end[k - 1]);
  fmt::print("rows (global id: sampled neighbours' global ids):\n");
  std::int64_t rows = static_cast<std::int64_t>(s.indptr.size()) - 1;
  for (std::int64_t r = 0; r < std::min<std::int64_t>(rows, max_rows); ++r) {
    std::vector<std::int64_t> nbrs;
    for (auto e = s.indptr[r]; e < s.indptr[r + 1]; ++e) nbrs.push_back(s.nodes[s.indices[e]]);
    fmt::print("  {}: [{}]\n", s.nodes[r], fmt::join(nbrs, ", "));
  }
  if (rows > max_rows) fmt::print("  ... {} more rows (use --json for all)\n", rows - max_rows);
}

status run_sample(const sample_args& a, global_options& g) {
  SPINDLE_ASSIGN_OR_RETURN(auto seeds, parse_seed_list(a.seeds));
  auto fanouts = config::parse_fanouts(a.fanouts);
  if (!fanouts) return std::move(fanouts).error().with_context("--");
  SPINDLE_ASSIGN_OR_RETURN(auto d, graph::dataset::open(a.dir));
  graph::sample_options o{*fanouts, a.weighted, a.seed};
  graph::inline_executor inl;
  graph::pooled_executor pooled(g.pool());
  graph::sampling_executor& ex =
      a.executor == "pooled" ? static_cast<graph::sampling_executor&>(pooled) : inl;
  auto t0 = std::chrono::steady_clock::now();
  auto s = ex.sample(d.graph(), seeds, o);
  double micros =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (!s) return std::move(s).error().with_context(a.dir + ": ");
  if (a.json)
    fmt::print("{}\n", to_json(*s, micros));
  else
    print_text(*s, micros, a.max_rows);
  if (a.per_seed) {  // what requests with a sampler seed cost: one graph each
    std::size_t nodes = 0, edges = 0;
    for (auto v : seeds) {
      SPINDLE_ASSIGN_OR_RETURN(auto one, ex.sample(d.graph(), std::span(&v, 1), o));
      nodes += one.nodes.size(), edges += std::size_t(one.num_edges());
    }
    fmt::print(
        "per seed (one graph per seed, as requests with a sampler seed): {} nodes, {} "
        "edges in all, vs {} nodes, {} edges sampled jointly\n",
        nodes, edges, s->nodes.size(), s->num_edges());
  }
  return status::ok();
}

}  // namespace

void register_sample(CLI::App& app, global_options& g) {
  auto [cmd, a] =
      add_command<sample_args>(app, "sample",
                               "Sample the k-hop neighbourhood of some seed nodes and print the "
                               "sampled blocks (PyG NeighborLoader semantics)");
  cmd->add_option("dir", a->dir, "Dataset directory")->required();
  cmd->add_option("--seeds", a->seeds, "Comma-separated seed node ids, e.g. 1,2,3")->required();
  cmd->add_option("--fanouts", a->fanouts, "Neighbours per hop, e.g. 25,10 (-1: all)")
      ->default_val("25,10");
  cmd->add_option("--seed", a->seed, "Sampler random seed (same seed, same sample)")
      ->default_val(0);
  cmd->add_option("--executor", a->executor, "inline (calling thread) or pooled (thread pool)")
      ->check(CLI::IsMember({"inline", "pooled"}))
      ->default_val("inline");
  cmd->add_flag("--weighted", a->weighted,
                "Draw neighbours by edge_weight (needs edge_weight.npy)");
  cmd->add_flag("--per-seed", a->per_seed,
                "Also sample each seed on its own (as serving does for requests with a sampler "
                "seed) and compare the rows and edges with the joint batch");
  cmd->add_option("--max-rows", a->max_rows, "Rows to print in text mode")->default_val(20);
  cmd->add_flag("--json", a->json, "Print nodes, hop_end, seed_local, indptr, indices as JSON");
  on_run(cmd, [a, &g] { return run_sample(*a, g); });
}

}  // namespace spindle::apps
