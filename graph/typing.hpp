// The typing of a heterogeneous graph (node types holding contiguous global id
// ranges, edge types naming their ends) and the lookups between a node's global
// id and its (type, local id) through a live graph's delta, where added nodes
// sit past the base's last id. Pure values and functions: safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle::graph {

struct graph_delta;

/// A node type of a typed graph: its nodes are the global ids
/// [offset, offset + count); their features are the first feature_dim columns.
struct node_type_info {
  std::string name;
  std::int64_t offset = 0, count = 0, feature_dim = 0;
};

/// An edge type (src, rel, dst) of a typed graph; its id is its index in
/// dataset_metadata::edge_types. count: its stored edges.
struct edge_type_info {
  std::string src, rel, dst;
  std::int64_t count = 0;
};

/// Most edge types a dataset may have (ids are int16 in edge_types.npy).
inline constexpr std::int64_t kMaxEdgeTypes = 32767;

/// The index of base node v's type (by offsets); 0 when `types` is empty.
int base_type_of(std::span<const node_type_info> types, std::int64_t v);

/// Node v's type at delta `d` (null: the base alone): the base's range, or the
/// type an update gave it when added. -1 when v is neither.
int node_type_at(std::span<const node_type_info> types, const graph_delta* d, std::int64_t v);
/// Node v's id within its type at `d` (-1 when v is no node).
std::int64_t local_id_at(std::span<const node_type_info> types, const graph_delta* d,
                         std::int64_t v);
/// How many nodes type t holds at `d` (its base count plus those added; removed
/// ones stay counted: ids are never reused).
std::int64_t type_count_at(std::span<const node_type_info> types, const graph_delta* d, int t);
/// The global id of type t's node `local` at `d`, or -1 when out of its range.
std::int64_t global_id_at(std::span<const node_type_info> types, const graph_delta* d, int t,
                          std::int64_t local);

/// "src,rel,dst", as errors and doors name an edge type.
std::string edge_type_name(const edge_type_info& e);
/// The edge type called `name`: "src,rel,dst" (spaces around the commas allowed)
/// or a relation no other edge type has; the error names it and the known ones.
expected<int> find_edge_type(std::span<const edge_type_info> types, std::string_view name);
/// The node type called `name`; the error lists the known names.
expected<int> find_node_type(std::span<const node_type_info> types, std::string_view name);

}  // namespace spindle::graph
