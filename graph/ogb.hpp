// OGB's on-disk layout for a node-property dataset (what `ogb` downloads into
// DATASET/raw/): edge.csv.gz, num-node-list.csv.gz, and optionally
// node-feat.csv.gz and node-label.csv.gz. Finds the files and reads the labels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::graph {

struct ogb_layout {
  std::string edges;            // raw/edge.csv.gz: "src,dst" per line, no header
  std::string features;         // raw/node-feat.csv.gz, or empty
  std::string labels;           // raw/node-label.csv.gz, or empty
  std::int64_t num_nodes = -1;  // from raw/num-node-list.csv.gz (isolated nodes count)
};

/// True when `dir` (the dataset folder or its raw/) holds OGB's edge.csv(.gz).
bool looks_like_ogb(const std::string& dir);

/// Finds the files under `dir` (the dataset folder or its raw/). Refuses what
/// Spindle cannot serve, naming it: heterogeneous graphs (raw/relations) and
/// graph-property datasets (num-node-list with more than one graph).
expected<ogb_layout> find_ogb_layout(const std::string& dir);

/// node-label.csv(.gz): one class per line; an empty or "nan" line (an
/// unlabelled node, as in ogbn-papers100M) becomes -1.
struct ogb_labels {
  std::vector<std::int64_t> values;
  std::int64_t num_classes = 0;  // 1 + the largest class
};
expected<ogb_labels> load_ogb_labels(const std::string& path);

}  // namespace spindle::graph
