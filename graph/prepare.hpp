// The steps behind `spindle prepare` and `spindle generate`: read inputs or
// generate R-MAT, build the CSR, compute PSGS/FAP, write the dataset
// directory. Progress goes to stderr; errors name the input file and fault.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/sampling.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/dataset.hpp"
#include "graph/edge_list.hpp"
#include "graph/loaders.hpp"
#include "graph/rmat.hpp"

namespace spindle::graph {

struct metrics_request {
  std::vector<int> fanouts{25, 10};
  config::seed_distribution seeds;
  /// Typed graphs: the node types request seeds are of (seeds of other types get
  /// no probability); empty: every node type.
  std::vector<std::string> seed_node_types;
};

/// The request a dataset's metrics were computed for (its metadata's fanouts,
/// seed distribution and seed node types).
metrics_request recorded_metrics_request(const dataset_metadata& meta);
/// p_0 of `m`'s request seeds on `g` (nodes typed by `meta`): its seed
/// distribution restricted to its seed node types, renormalised. Errors name
/// an unknown node type or types given no seeds.
expected<std::vector<double>> request_seed_probabilities(const csr_view& g,
                                                         const dataset_metadata& meta,
                                                         const metrics_request& m);

/// Which stored neighbours a node aggregates over, for a directed input edge u -> v.
/// in (PyG and DGL's message flow, the default): v aggregates over u, so v's CSR
/// row lists the sources of its incoming edges. out: u's row lists the targets
/// of its outgoing edges (Spindle in earlier releases). Undirected graphs store both.
enum class edge_direction { in, out };
std::string_view to_string(edge_direction d);
expected<edge_direction> parse_edge_direction(std::string_view name);

/// Features made for a graph that has none (PyG's usual choices for featureless
/// graphs): `degree` (one column: the node's stored degree), `onehot-degree[:MAX]`
/// (PyG's OneHotDegree: MAX + 1 columns, degrees past MAX in the last; default
/// MAX 32), `random:DIM` (DIM columns of N(0, 1), fixed per node).
struct synthetic_features_spec {
  enum class kind { degree, onehot_degree, random } what = kind::degree;
  int columns = 1;   // onehot: MAX + 1; random: DIM
  std::string text;  // as given, recorded in metadata.json
};
/// Parses "degree", "onehot-degree", "onehot-degree:MAX" or "random:DIM";
/// nullopt when `text` is none of them (a feature file's path).
expected<std::optional<synthetic_features_spec>> parse_synthetic_features(std::string_view text);

struct prepare_options {
  std::string input;                  // edge file
  std::optional<edge_format> format;  // guessed from the name when empty
  std::string features;               // optional feature file
  std::optional<feature_format> features_format;
  std::optional<synthetic_features_spec> synthetic;  // instead of a feature file
  build_options build;  // its keep_* are replaced by the two below
  // Self-loops and repeated edges: kept when unset for a NumPy edge_index (PyG's
  // layers see every column of it), dropped when unset for text edge lists.
  std::optional<bool> keep_self_loops, keep_duplicates;
  edge_direction direction = edge_direction::in;
  metrics_request metrics;
  std::string name;    // dataset name (default: input file stem)
  bool force = false;  // replace a non-empty output directory
  bool allow_nonfinite_features = false;  // keep NaN/Inf feature values (refused otherwise)
};

/// Converts `o.input` (+ features) into a dataset directory at `out_dir`.
status prepare_dataset(const prepare_options& o, const std::string& out_dir, thread_pool& pool);

/// Runs `write(staging)` into a new folder beside `out_dir`, then puts it in
/// place of `out_dir` whole (renames), so no file of an earlier dataset is left
/// beside the new metadata and a failed run leaves `out_dir` as it was. A
/// non-empty `out_dir` is refused, naming an entry, unless `force`.
status write_dataset_dir(const std::string& out_dir, bool force,
                         const std::function<status(const std::string&)>& write);

/// Recomputes psgs.npy / fap.npy of an existing dataset in place.
status recompute_metrics(const std::string& dir, const metrics_request& m, thread_pool& pool);

struct generate_options {
  bool force = false;  // replace a non-empty output directory
  rmat_options rmat;
  std::int64_t feature_dim = 64;
  bool undirected = false;
  metrics_request metrics;
};

/// Writes an R-MAT dataset (graph, synthetic features, metrics) to `out_dir`.
status generate_dataset(const generate_options& o, const std::string& out_dir, thread_pool& pool);

}  // namespace spindle::graph
