// Spindle's graph-update extension of KServe over HTTP: POST /v2/graph/update
// takes one batch as JSON and GET /v2/graph reads the version (both with the
// admin token as `Authorization: Bearer TOKEN`). The body's fields are those of
// the Python client's update_graph:
//   {"add_edges": [[src, ...], [dst, ...]], "remove_edges": [[...], [...]],
//    "add_nodes": [[feature, ...], ...], "set_features": {"ids": [...], "rows": [[...], ...]},
//    "remove_nodes": [...]}
// On a typed graph each field is keyed by type, ids local to it (new_ids too):
//   {"add_edges": {"user,pays,merchant": [[src, ...], [dst, ...]]},
//    "add_nodes": {"tx": [[feature, ...], ...]} (or a count for a featureless type),
//    "set_features": {"user": {"ids": [...], "rows": [[...], ...]}},
//    "remove_nodes": {"user": [...]}, "remove_edges": {...}}
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::transport::kserve {

/// The batch a body asks for; errors name the field.
expected<rpc::graph_edit> graph_edit_of_json(std::string_view body);
/// {"version": V, "nodes": N, "new_ids": [...]}; a typed batch (`typed`, its
/// nodes added per type in `added`, in its order) also answers
/// "new_ids_by_type": {"type": [local ids]}, naming only the types that gained
/// nodes (as the Python client's `new_ids` dict does).
std::string graph_answer_json(const rpc::graph_edit_answer& a,
                              const std::vector<std::pair<std::string, std::int64_t>>& added = {},
                              bool typed = false);

}  // namespace spindle::transport::kserve
