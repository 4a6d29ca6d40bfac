// Turning an edge list (as loaders read it) into a CSR graph: optional
// symmetrisation, self-loop and duplicate handling, dense relabelling of sparse
// ids. Pure functions; the pool, when given, only speeds up row sorting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/csr.hpp"

namespace spindle::graph {

/// Directed edges src[i] -> dst[i], optional weight per edge.
struct edge_list {
  std::vector<std::int64_t> src;
  std::vector<std::int64_t> dst;
  std::vector<float> weight;  // empty, or one per edge
  /// Non-empty when the input named nodes with strings (e.g. CiteSeer's
  /// "bradshaw97introduction"): src/dst then index this list, already dense.
  std::vector<std::string> names;
};

enum class relabel_mode {
  auto_detect,  // relabel only when ids are sparse (max id + 1 > distinct ids) or negative
  always,       // map ids to 0..n-1 in ascending id order
  never,        // ids are already node indices in [0, num_nodes)
};

struct build_options {
  bool undirected = false;       // add v->u for every u->v
  bool keep_self_loops = false;  // default drops u->u
  bool keep_duplicates = false;  // default keeps one u->v (the largest weight)
  relabel_mode relabel = relabel_mode::auto_detect;
  std::int64_t num_nodes = 0;    // with relabel never: node count (0: max id + 1)
};

struct built_graph {
  csr_graph csr;
  std::vector<std::int64_t> original_ids;  // dense id -> input id; empty when not relabelled
  std::int64_t self_loops = 0;          // u->u edges in the input (kept or dropped)
  std::int64_t duplicates = 0;          // repeats of an earlier u->v (kept or dropped)
  std::int64_t self_loops_dropped = 0;
  std::int64_t duplicates_dropped = 0;
};

/// Builds a CSR with rows sorted by neighbour id. Consumes `edges` to bound
/// peak memory. Errors name the offending id (e.g. an id >= num_nodes).
expected<built_graph> build_csr(edge_list edges, const build_options& options,
                                thread_pool* pool = nullptr);

/// Maps every id in `ids` through the sorted unique id list `sorted_ids` (in place).
void relabel_in_place(std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& sorted_ids);

}  // namespace spindle::graph
