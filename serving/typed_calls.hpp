// Serving a typed (heterogeneous) model on a typed graph: which of the graph's
// edge types the model reads and how many neighbours each hop samples of each,
// and a call's seeds, named by node type and numbered within it, as the graph's
// node ids. Doors and pipelines share these checks, so a call a typed model
// cannot answer is refused by name, never answered from the wrong rows.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "core/status.hpp"
#include "graph/dataset.hpp"

namespace spindle::serving {

struct gnn_request;

/// For each of the graph's edge types, the model's edge type it is (-1: unread).
/// Refuses a typed model on an untyped graph, a model of one node type on a
/// typed graph, and a model edge or node type the graph lacks, by name.
expected<std::vector<int>> relation_map(const graph::dataset& ds, const config::model_desc& d);

/// For each of the graph's node types, the model's index of it (-1: unread).
std::vector<std::int16_t> model_node_types(const graph::dataset& ds, const config::model_desc& d);
/// Each sampled node's model node type (`model_type_of`: model_node_types()) into
/// `row_types`, and with `ids` its id within its dataset node type into `row_ids`
/// (what embedding tables are read by), at the live graph's delta `d` (null: the
/// base), where nodes added while serving have their types and local ids.
void sampled_row_types(const graph::dataset& ds, const graph::graph_delta* d,
                       std::span<const std::int16_t> model_type_of,
                       std::span<const std::int64_t> nodes, bool ids,
                       std::vector<std::int16_t>& row_types, std::vector<std::int64_t>& row_ids);

/// typed_fanouts[hop][graph edge type] for graph::sample_options: the model's
/// edge type's own fanouts, else `fanouts` (one per hop); 0 for edge types the
/// model does not read.
std::vector<std::vector<int>> typed_fanouts(const config::model_desc& d,
                                            std::span<const int> relation_of_type,
                                            std::span<const int> fanouts);

/// A call's seeds, numbered within `node_type`, as the graph's node ids (in
/// place). Refuses a typed model's call without a node type, a node type the
/// model does not answer, a seed outside the type (counting the nodes added
/// while serving: the live graph's current delta), a removed seed, and a node
/// type given to a model of one node type. A typed link model's `pairs` (u0 v0 u1 v1 ...) are
/// numbered within its pair types (config::model_types::pair_types) instead.
status to_graph_ids(const graph::dataset& ds, const config::model_desc& d,
                    const std::string& node_type, std::vector<std::int64_t>& seeds,
                    bool pairs = false);

/// A typed link model's pairs (graph ids at delta `delta`): the outputs answering
/// each end's node type, (src, dst); refuses an end not of its pair type by position.
expected<std::pair<std::size_t, std::size_t>> typed_pair_outputs(
    const graph::dataset& ds, const graph::graph_delta* delta, const config::model_desc& d,
    std::span<const std::int64_t> seeds);

/// The model output answering `node_type` when every seed (graph ids at delta
/// `delta`, null: the base) is of it.
expected<std::size_t> typed_output(const graph::dataset& ds, const graph::graph_delta* delta,
                                   const config::model_desc& d, const std::string& node_type,
                                   std::span<const std::int64_t> seeds);

/// The workload generator's calls (`spindle serve --workload`) shaped for model
/// `d`: seeds drawn as graph ids (degree_requests) become, for a typed model,
/// ids within its first answered node type (named in each call) and, for a link
/// model, pairs (the second end a fixed hash of the first, within its pair type),
/// then numbered as graph ids (to_graph_ids), as the door hands calls on to the
/// batcher. A model of one node type answering nodes takes them as they are.
void shape_workload(const graph::dataset& ds, const config::model_desc& d,
                    std::vector<gnn_request>& requests);

}  // namespace spindle::serving
