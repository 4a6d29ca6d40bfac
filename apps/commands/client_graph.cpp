// `spindle client graph update|version`: graph changes from .npy files, as a
// user saves them with numpy (edges as a [2, E] int64 edge_index, feature rows
// as float32 [n, width]), sent as one batch through Admin.updateGraph. On a typed
// graph --edge-type and --node-type name the types, ids local to them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/commands/client_args.hpp"
#include "apps/commands/command.hpp"
#include "core/npy.hpp"
#include "runtime/graph_stream.hpp"

namespace spindle::apps {
namespace {

namespace rpc = transport::rpc;

struct graph_args {
  std::string add_edges, add_weights, remove_edges, add_nodes, set_ids, set_rows, remove_nodes;
  std::string edge_type, node_type;  // a typed graph's: the edges' and the nodes' types
  std::string redis, stream = "spindle:graph";  // --redis: append to the stream instead
  bool json = false;
};

template <class T>
expected<std::vector<T>> read_array(const std::string& path, std::string_view flag,
                                    std::vector<std::int64_t>* shape = nullptr) {
  SPINDLE_ASSIGN_OR_RETURN(auto a, npy_array::open_any_order(path));
  auto v = a.as<T>();
  if (!v) return std::move(v).error().with_context(fmt::format("{}: ", flag));
  if (shape) *shape = a.shape();
  std::vector<T> out(v->begin(), v->end());
  if (a.fortran_order() && a.shape().size() == 2) {  // np.save(pairs.T): to row-major
    const auto rows = std::size_t(a.shape()[0]), cols = std::size_t(a.shape()[1]);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) out[r * cols + c] = (*v)[c * rows + r];
  }
  return out;
}

// A [2, E] edge_index file as (src, dst).
status read_edges(const std::string& path, std::string_view flag, std::vector<std::int64_t>& src,
                  std::vector<std::int64_t>& dst) {
  if (path.empty()) return status::ok();
  std::vector<std::int64_t> shape;
  SPINDLE_ASSIGN_OR_RETURN(auto e, read_array<std::int64_t>(path, flag, &shape));
  if (shape.size() != 2 || shape[0] != 2)
    return make_error(errc::invalid_argument, "{} {}: expected an edge_index of shape [2, E]",
                      flag, path);
  const auto n = std::size_t(shape[1]);
  src.assign(e.begin(), e.begin() + std::ptrdiff_t(n));
  dst.assign(e.begin() + std::ptrdiff_t(n), e.end());
  return status::ok();
}

// The batch read as untyped, moved into one edge type's and one node type's groups.
expected<rpc::graph_edit> typed_edit_of(const graph_args& a, rpc::graph_edit flat) {
  const bool edges = !flat.add_src.empty() || !flat.remove_src.empty();
  const bool nodes = flat.add_nodes > 0 || !flat.set_ids.empty() || !flat.remove_nodes.empty();
  if (edges && a.edge_type.empty())
    return make_error(errc::invalid_argument, "--add-edges/--remove-edges with --node-type: name "
                      "the edges' type with --edge-type \"src,rel,dst\"");
  if (nodes && a.node_type.empty())
    return make_error(errc::invalid_argument, "--add-nodes/--set-ids/--remove-nodes with "
                      "--edge-type: name the nodes' type with --node-type");
  rpc::graph_edit e;
  if (!flat.add_src.empty())
    e.add_typed.push_back({a.edge_type, std::move(flat.add_src), std::move(flat.add_dst),
                           std::move(flat.add_weight)});
  if (!flat.remove_src.empty())
    e.remove_typed.push_back(
        {a.edge_type, std::move(flat.remove_src), std::move(flat.remove_dst), {}});
  if (nodes)
    e.nodes.push_back({a.node_type, flat.add_nodes, std::move(flat.add_node_features),
                       std::move(flat.set_ids), std::move(flat.set_rows),
                       std::move(flat.remove_nodes)});
  return e;
}

expected<rpc::graph_edit> edit_of(const graph_args& a) {
  rpc::graph_edit e;
  SPINDLE_TRY(read_edges(a.add_edges, "--add-edges", e.add_src, e.add_dst));
  if (!a.add_weights.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(e.add_weight, read_array<float>(a.add_weights, "--add-weights"));
  }
  SPINDLE_TRY(read_edges(a.remove_edges, "--remove-edges", e.remove_src, e.remove_dst));
  if (!a.add_nodes.empty()) {
    std::vector<std::int64_t> shape;
    SPINDLE_ASSIGN_OR_RETURN(e.add_node_features,
                             read_array<float>(a.add_nodes, "--add-nodes", &shape));
    if (shape.size() != 2)
      return make_error(errc::invalid_argument, "--add-nodes {}: expected float32 [n, width]",
                        a.add_nodes);
    e.add_nodes = shape[0];
  }
  if (a.set_ids.empty() != a.set_rows.empty())
    return make_error(errc::invalid_argument, "--set-ids and --set-rows go together");
  if (!a.set_ids.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(e.set_ids, read_array<std::int64_t>(a.set_ids, "--set-ids"));
    SPINDLE_ASSIGN_OR_RETURN(e.set_rows, read_array<float>(a.set_rows, "--set-rows"));
  }
  if (!a.remove_nodes.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(e.remove_nodes,
                             read_array<std::int64_t>(a.remove_nodes, "--remove-nodes"));
  }
  return a.edge_type.empty() && a.node_type.empty() ? e : typed_edit_of(a, std::move(e));
}

status print(const expected<rpc::graph_edit_answer>& r, bool json) {
  if (!r) return r.error();
  if (r->status != rpc::rpc_status::ok)
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r->status), r->message);
  if (json)
    fmt::print("{{\"version\": {}, \"nodes\": {}, \"new_ids\": [{}]}}\n", r->version, r->nodes,
               fmt::join(r->new_ids, ", "));
  else
    fmt::print("graph version {} ({} node ids{}{})\n", r->version, r->nodes,
               r->new_ids.empty() ? "" : "; new: ", fmt::join(r->new_ids, ", "));
  return status::ok();
}

// Appends the batch to the servers' update stream; each applies it in turn.
status publish(const graph_args& a, const rpc::graph_edit& edit) {
  SPINDLE_ASSIGN_OR_RETURN(auto id, runtime::publish_graph_update(a.redis, a.stream, edit));
  if (a.json)
    fmt::print("{{\"stream\": \"{}\", \"id\": \"{}\"}}\n", a.stream, id);
  else
    fmt::print("appended to {} as entry {}\n", a.stream, id);
  return status::ok();
}

status run_update(const client_args& c, const graph_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto edit, edit_of(a));
  if (!a.redis.empty() && edit.typed())
    return make_error(errc::invalid_argument,
                      "--redis with --edge-type/--node-type: stream entries carry no node or edge "
                      "types (a typed graph takes its updates through the server's doors)");
  if (!a.redis.empty()) return publish(a, edit);
  SPINDLE_ASSIGN_OR_RETURN(auto token, token_of(c));
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  return print(client->update_graph(token, edit), a.json);
}

status run_version(const client_args& c, bool json) {
  SPINDLE_ASSIGN_OR_RETURN(auto token, token_of(c));
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  return print(client->graph_version(token), json);
}

}  // namespace

void add_graph_command(CLI::App& client_cmd, std::shared_ptr<client_args> c) {
  auto [graph, ga] = add_command<graph_args>(
      client_cmd, "graph",
      "Change the served graph (a server started with --graph-updates) or read its version");
  graph->require_subcommand(1);
  auto* update = graph->add_subcommand(
      "update", "Apply one batch of changes, whole or not at all (needs the admin token)");
  update->add_option("--add-edges", ga->add_edges, "Edges to add: edge_index .npy, int64 [2, E]");
  update->add_option("--add-weights", ga->add_weights,
                     "The added edges' weights on a weighted graph: float32 [E]");
  update->add_option("--remove-edges", ga->remove_edges,
                     "Edges to remove (each must exist): int64 [2, E]");
  update->add_option("--add-nodes", ga->add_nodes,
                     "New nodes' feature rows, float32 [n, width]: they get the ids after the "
                     "last one (printed)");
  update->add_option("--set-ids", ga->set_ids, "Nodes whose feature rows to replace: int64 [k]");
  update->add_option("--set-rows", ga->set_rows, "Their new rows: float32 [k, width]");
  update->add_option("--remove-nodes", ga->remove_nodes, "Nodes to remove: int64 [k]");
  update->add_option("--edge-type", ga->edge_type,
                     "A typed graph: the edges' type, \"src,rel,dst\" or a relation no other "
                     "edge type has (ids local to src and dst)");
  update->add_option("--node-type", ga->node_type,
                     "A typed graph: the nodes' type (ids local to it; rows of its width; new "
                     "ids printed local)");
  update->add_option("--redis", ga->redis,
                     "Append the batch to a Redis Stream at HOST:PORT instead (servers started "
                     "with --graph-stream apply it; prints the entry id)");
  update->add_option("--stream", ga->stream, "With --redis: the stream's key")
      ->capture_default_str();
  update->add_flag("--json", ga->json, "Print JSON");
  on_run(update, [c, ga] { return run_update(*c, *ga); });
  auto* version = graph->add_subcommand("version", "The served graph's version and node ids");
  version->add_flag("--json", ga->json, "Print JSON");
  on_run(version, [c, ga] { return run_version(*c, ga->json); });
}

}  // namespace spindle::apps
