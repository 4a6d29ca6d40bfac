// The numbers `spindle prepare` and `spindle info` print about a dataset:
// sizes, degree percentiles, PSGS percentiles and how concentrated FAP is.
// Pure functions over an opened dataset.
#pragma once

#include <cstdint>
#include <string>

#include "graph/dataset.hpp"

namespace spindle::graph {

struct dataset_summary {
  std::int64_t num_nodes = 0, num_edges = 0, feature_dim = 0, num_classes = 0;
  std::int64_t isolated_nodes = 0;  // out-degree 0
  double degree_p50 = 0, degree_p90 = 0, degree_p99 = 0, degree_max = 0, degree_mean = 0;
  bool has_metrics = false;
  std::string fanouts, seed_distribution;
  double psgs_p50 = 0, psgs_p99 = 0, psgs_max = 0;
  double fap_top1_share = 0, fap_top10_share = 0;  // share of FAP mass in the top 1% / 10% of nodes
  double expected_visits_per_request = 0;          // sum of FAP
};

dataset_summary summarize(const dataset& d);
/// Aligned two-column table for terminals.
std::string format_table(const dataset_summary& s);
/// A typed graph's node types (name, count, feature width) and edge types
/// (src, rel, dst, count), one per line; "" for an untyped graph.
std::string format_types(const dataset_metadata& m);
/// One JSON object (for --json; node_types and edge_types when typed).
std::string format_json(const dataset_summary& s, const dataset_metadata& m);

}  // namespace spindle::graph
