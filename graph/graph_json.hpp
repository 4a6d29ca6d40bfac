// A graph as spindle_client.export.save_graph writes it: graph.json naming
// node types (features x, labels y) and edge types (edge_index, edge_attr)
// beside their .npy files. Reading checks every file's dtype, shape and ids;
// prepare_graph_json builds the dataset (typed when there is more than one
// node or edge type). Used by `spindle prepare` only; single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/npy.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/csr.hpp"
#include "graph/prepare.hpp"

namespace spindle::graph {

class dataset_writer;

struct graph_json_node_type {
  std::string name;
  std::int64_t num_nodes = 0;
  std::optional<npy_array> x;  // float32 [num_nodes, d]
  std::optional<npy_array> y;  // int64 [num_nodes], -1 unlabelled
};

struct graph_json_edge_type {
  std::string src, rel, dst;
  int src_type = 0, dst_type = 0;      // indexes of graph_json::node_types
  npy_array edge_index;                // int64 [2, E], local ids of src and dst
  std::optional<npy_array> edge_attr;  // float32 [E, k]
  std::int64_t num_edges() const { return edge_index.shape()[1]; }
};

struct graph_json {
  std::string path;  // of graph.json
  std::vector<graph_json_node_type> node_types;
  std::vector<graph_json_edge_type> edge_types;
};

/// graph.json's path when `input` is that file or a folder holding it.
std::optional<std::string> find_graph_json(const std::string& input);

/// Reads and checks graph.json and its arrays (mapped). Errors name the file
/// and field: a missing file, a wrong dtype or shape, an id out of range.
expected<graph_json> read_graph_json(const std::string& path);

/// Builds the dataset of `o.input`'s graph.json into `out_dir` (prepare's flow).
status prepare_graph_json(const prepare_options& o, const std::string& path,
                          const std::string& out_dir, thread_pool& pool);

/// prepare's PSGS/FAP over the whole graph (graph/prepare.cpp).
status write_metrics_for(dataset_writer& w, const csr_view& g, const metrics_request& m,
                         thread_pool& pool);

}  // namespace spindle::graph
