// Spindle's dataset directory: NumPy .npy arrays (mmap-able, readable by
// numpy.load) plus metadata.json with counts, dtypes, the fanouts and seed
// distribution the metrics were computed for, and each array's byte size and
// XXH3-64 checksum. `dataset` is an opened, validated, read-only view (safe
// from any thread); `dataset_writer` builds or updates a directory (one owner).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/npy.hpp"
#include "core/status.hpp"
#include "graph/csr.hpp"
#include "graph/live_graph.hpp"
#include "graph/metrics.hpp"
#include "graph/typing.hpp"

namespace spindle::graph {

inline constexpr int kDatasetFormatVersion = 1;

/// One stored array as metadata.json records it.
struct array_record {
  std::string file;
  dtype type = dtype::u8;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;  // XXH3-64 of the data bytes (header excluded)
};

struct dataset_metadata {
  int format_version = kDatasetFormatVersion;
  std::string name;
  std::string source;  // where it came from: input path(s) or "rmat scale=..."
  std::int64_t num_nodes = 0, num_edges = 0, feature_dim = 0, num_classes = 0;
  bool undirected = false;
  /// What a node's CSR row lists for a directed input edge u -> v: "in" (v's row
  /// holds u: PyG/DGL message flow), "out" (u's row holds v), "both" (undirected);
  /// empty in datasets written in earlier releases, which stored "out".
  std::string edge_direction;
  std::vector<int> fanouts;                    // the metrics' fanouts; empty when not computed
  std::string seed_distribution;               // "uniform", "degree" or a file path
  std::vector<std::string> seed_node_types;    // typed graphs: the types seeds are of (empty: all)
  std::vector<double> hop_mass;                // expected nodes visited per hop per request
  std::map<std::string, std::string> build;    // how it was built (flags, counts dropped)
  std::map<std::string, array_record> arrays;  // "indptr", "indices", "features", ...
  /// A typed (heterogeneous) graph's node types, in offset order; empty: untyped.
  std::vector<node_type_info> node_types;
  /// Its edge types; an edge's type id (edge_types.npy) indexes this list.
  std::vector<edge_type_info> edge_types;
  bool typed() const { return !node_types.empty(); }
};

/// Checks the typing of `m` (offsets cumulative, counts summing to num_nodes,
/// unique non-empty names, edge types naming node types, their counts summing to
/// num_edges, feature_dim the widest type's). Errors name metadata.json's field.
status validate_types(const dataset_metadata& m);
/// XXH3-64 of the typing (every node type's name, offset, count and width, every
/// edge type's src, rel, dst and count), stored as metadata.json's
/// `types_xxh3_64`: the arrays' checksums do not cover the type ranges, and a hand
/// edit that keeps the counts' sums would read nodes as another type.
std::uint64_t typing_checksum(const dataset_metadata& m);

struct open_options {
  bool verify_checksums = false;  // hash every array (reads all bytes)
};

class dataset {
 public:
  /// Maps the arrays and validates metadata, headers, sizes, CSR structure and
  /// value ranges (checksums too when asked). Errors name the file and fault.
  static expected<dataset> open(const std::string& dir, open_options options = {});

  const std::string& dir() const { return dir_; }
  const dataset_metadata& metadata() const { return meta_; }
  csr_view graph() const { return graph_; }
  std::int64_t num_nodes() const { return graph_.num_nodes; }
  std::int64_t feature_dim() const { return meta_.feature_dim; }
  /// Row-major float32 [num_nodes, feature_dim]; empty when there are no features,
  /// and in a cluster rank's partition (which holds only its rows: feature_row()).
  std::span<const float> features() const { return features_; }
  /// A rank's partition of a cluster dataset (`spindle partition`): the graph
  /// and metrics whole, feature rows only for the nodes part_rows() lists (sorted).
  bool partitioned() const { return !part_rows_.empty() || meta_.build.count("partition_rank"); }
  std::span<const std::int64_t> part_rows() const { return part_rows_; }
  /// Node v's feature row, or nullptr when this (partitioned) dataset does not hold it.
  const float* feature_row(std::int64_t v) const;
  /// Maps every page of the feature table into this process now (the file is
  /// memory-mapped; a serving process would otherwise take a page fault on each
  /// row's first read, hundreds of microseconds per cold batch). Idempotent.
  void warm_features() const;
  /// Row-major float32 [num_edges, edge_attr_cols()]: row e is the attributes of the
  /// edge at CSR position e (edge_attr.npy); empty when the graph has none.
  std::span<const float> edge_attr() const { return edge_attr_; }
  std::int64_t edge_attr_cols() const { return edge_attr_cols_; }
  std::span<const double> psgs() const { return psgs_; }  // empty when not computed
  std::span<const double> fap() const { return fap_; }
  /// Class of each node, -1 where the input had none (OGB's nan); empty when unlabelled.
  std::span<const std::int64_t> labels() const { return labels_; }
  std::span<const std::int64_t> node_ids() const { return node_ids_; }  // input ids, if relabelled
  /// Nodes removed by graph updates before this dataset was compacted from them:
  /// they have no edges here, and a live graph over it keeps refusing them.
  std::span<const std::int64_t> removed_nodes() const { return removed_nodes_; }
  bool has_metrics() const { return !psgs_.empty(); }
  /// A typed graph's node and edge types (empty when untyped); the edge types
  /// of graph().edge_types index edge_types_info().
  bool typed() const { return meta_.typed(); }
  std::span<const node_type_info> node_types() const { return meta_.node_types; }
  std::span<const edge_type_info> edge_types_info() const { return meta_.edge_types; }
  /// The index of node v's type (v in [0, num_nodes)); 0 on an untyped graph.
  int node_type_of(std::int64_t v) const;
  /// The index of the node type called `name`; the error lists the known names.
  expected<int> find_node_type(std::string_view name) const;
  /// The live graph taking this dataset's updates while it is served, or null
  /// (a static graph). Set once, before serving starts.
  const live_graph* live() const { return live_.get(); }
  live_graph* live() { return live_.get(); }
  void set_live(std::shared_ptr<live_graph> g) { live_ = std::move(g); }
  /// Node ids in use now: the base's, plus nodes added while serving.
  std::int64_t live_num_nodes() const;

 private:
  // graph/typed_dataset.cpp: edge_types.npy into graph_ (before validate_csr
  // checks its range and order), then every edge's endpoints against its type.
  status open_types();
  status check_edge_endpoints() const;

  std::string dir_;
  dataset_metadata meta_;
  std::map<std::string, npy_array> files_;
  csr_view graph_;
  std::span<const float> features_;
  std::span<const float> edge_attr_;
  std::int64_t edge_attr_cols_ = 0;
  std::span<const std::int64_t> part_rows_;  // a partition's nodes, ascending
  std::span<const float> part_features_;     // their rows, in that order
  std::span<const double> psgs_, fap_;
  std::span<const std::int64_t> labels_, node_ids_, removed_nodes_;
  std::shared_ptr<live_graph> live_;  // null: a static graph
};

/// How servers open the data they serve: checksums verified (a byte flipped in
/// features.npy or indices.npy is refused, naming the file) unless `skip`, which
/// logs that the data was not verified. Logs the time and bytes verified.
expected<dataset> open_for_serving(const std::string& dir, bool skip);

/// Writes arrays into a dataset directory and records them; finish() writes
/// metadata.json last (atomically), so a half-written directory never opens.
class dataset_writer {
 public:
  /// Starts a new dataset in `dir` (created if missing).
  static expected<dataset_writer> create(const std::string& dir, dataset_metadata base);
  /// Reopens an existing directory to replace some arrays (e.g. metrics).
  static expected<dataset_writer> update(const std::string& dir);

  dataset_metadata& metadata() { return meta_; }
  /// Writes indptr, indices, edge_weight and (when g is typed) edge_types.
  status write_graph(const csr_view& g);
  /// Writes edge_attr.npy: float32 [num_edges, cols], row e for CSR position e.
  status write_edge_attr(std::span<const float> values, std::int64_t cols);
  /// Streams features: fill(row_begin, row_end, out) writes rows into `out`.
  status write_features(std::int64_t rows, std::int64_t cols,
                        const std::function<void(std::int64_t, std::int64_t, float*)>& fill);
  status write_labels(std::span<const std::int64_t> labels, std::int64_t num_classes);
  status write_node_ids(std::span<const std::int64_t> ids);
  status write_removed_nodes(std::span<const std::int64_t> ids);
  /// Input node names (text ids): node_ids.npy when all are integers, else node_names.txt.
  status write_node_names(const std::vector<std::string>& names);
  status write_metrics(const workload_metrics& m, const std::vector<int>& fanouts,
                       const std::string& seed_distribution,
                       const std::vector<std::string>& seed_node_types = {});
  /// A partition's rows: part_rows.npy (`rows`, ascending) and part_features.npy
  /// ([rows x feature_dim], row i from `row_of(rows[i])`).
  status write_partition(std::span<const std::int64_t> rows, std::int64_t dim,
                         const std::function<const float*(std::int64_t)>& row_of);
  /// Copies array `name` of the dataset in `from` (file and record, checksum kept).
  status copy_array(const std::string& from, const std::string& name, const array_record& r);
  status finish();

 private:
  status write_array(const std::string& name, dtype type, std::vector<std::int64_t> shape,
                     const void* data);
  std::string dir_;
  dataset_metadata meta_;
};

/// Reads and checks metadata.json alone (used by `info` and by open).
expected<dataset_metadata> read_metadata(const std::string& dir);
/// The metadata.json text for `m` (pretty-printed JSON).
std::string metadata_to_json(const dataset_metadata& m);

}  // namespace spindle::graph
