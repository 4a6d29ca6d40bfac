// Readers for the graph inputs users bring: SNAP edge lists, CSV edge lists,
// NumPy edge_index [2,E] (.npy/.npz), OGB dataset folders, and node features as .npy, CSV (one row per node) or
// LINQS "content" files (id, features..., label). Plain or .gz text. Pure
// functions; errors name the file, line and field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "graph/edge_list.hpp"

namespace spindle::graph {

enum class edge_format { snap, csv, npy, ogb };
std::string_view to_string(edge_format f);
expected<edge_format> parse_edge_format(std::string_view name);
/// An OGB dataset folder -> ogb; .npy -> npy; .csv / .csv.gz -> csv; anything else -> snap.
edge_format guess_edge_format(std::string_view path);

/// Reads edges; a third column (text) is the edge weight. `#` and `%` lines are
/// comments; a CSV header line (first field not a number) is skipped.
expected<edge_list> load_edges(const std::string& path, edge_format format);

enum class feature_format { npy, csv, linqs };
std::string_view to_string(feature_format f);
expected<feature_format> parse_feature_format(std::string_view name);
/// .npy -> npy; .content / .content.gz -> linqs; else csv.
feature_format guess_feature_format(std::string_view path);

/// Node features, row-major float32 [rows, cols]; ids and labels only for LINQS input.
struct feature_table {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;
  std::vector<std::string> row_names;     // LINQS: the input node id (text) of each row
  std::vector<std::int64_t> labels;       // LINQS: class index of each row
  std::vector<std::string> class_names;   // LINQS: class index -> label text (sorted)
};

/// Reads features; .npy may be float32, float16-free float64 (converted) or int.
expected<feature_table> load_features(const std::string& path, feature_format format);

}  // namespace spindle::graph
