#include "config/model_types.hpp"

#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <set>

#include "config/detail/model_ops_toml.hpp"
#include "config/detail/toml_string.hpp"

namespace spindle::config {
namespace {

bool plain_name(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
  });
}

const toml::array* tables(const toml::table& root, std::string_view key, std::string_view origin,
                          status& st) {
  const toml::node* n = root.get(key);
  if (!n) return nullptr;
  const toml::array* arr = n->as_array();
  if (!arr || !arr->is_array_of_tables())
    st = make_error(errc::invalid_argument, "{}: [[{}]] must be an array of tables", origin, key);
  return st ? arr : nullptr;
}

// The string at `key` of table `t`, required and a plain name; errors name field.key.
status read_name(const toml::table& t, std::string_view key, std::string& out,
                 const std::string& field) {
  auto v = t.get(key) ? t.get(key)->value<std::string>() : std::nullopt;
  if (!v) return make_error(errc::invalid_argument, "{}.{} (a string) is required", field, key);
  if (!plain_name(*v))
    return make_error(errc::invalid_argument,
                      "{}.{} = '{}': names are 1..128 characters of A-Z, a-z, 0-9, '_', '-', '.'",
                      field, key, v->substr(0, 64));
  out = *v;
  return status::ok();
}

status only_keys(const toml::table& t, std::set<std::string_view> keys, const std::string& field) {
  for (auto&& [k, _] : t)
    if (!keys.count(k.str()))
      return make_error(errc::invalid_argument, "{}.{}: not a key Spindle reads (keys: {})", field,
                        k.str(), fmt::join(keys, ", "));
  return status::ok();
}

// A node type's embedding = "<tensor>" and embedding_rows = N, both or neither.
status parse_embedding(const toml::table& tab, const std::string& field, node_type_desc& n) {
  const bool named = tab.get("embedding") != nullptr, rows = tab.get("embedding_rows") != nullptr;
  if (!named && !rows) return status::ok();
  auto count = rows ? tab.get("embedding_rows")->value<std::int64_t>() : std::nullopt;
  if (!named)
    return make_error(errc::invalid_argument,
                      "{}.embedding (the tensor holding the type's table) goes with embedding_rows",
                      field);
  SPINDLE_TRY(read_name(tab, "embedding", n.embedding, field));
  if (!count || *count <= 0 || *count > (std::int64_t(1) << 40))
    return make_error(errc::invalid_argument,
                      "{}.embedding_rows (the table's rows: the type's node count) must be "
                      "1..2^40, with embedding",
                      field);
  if (*count * n.in > (std::int64_t(1) << 34))
    return make_error(errc::invalid_argument,
                      "{}: an embedding table of {} x {} floats exceeds 2^34 values", field,
                      *count, n.in);
  n.embedding_rows = *count;
  return status::ok();
}

status parse_node_types(const toml::array& arr, model_types& t) {
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto& tab = *arr.get(i)->as_table();
    const std::string field = fmt::format("node_type[{}]", i);
    SPINDLE_TRY(only_keys(tab, {"name", "in", "embedding", "embedding_rows"}, field));
    node_type_desc n;
    SPINDLE_TRY(read_name(tab, "name", n.name, field));
    auto in = tab.get("in") ? tab.get("in")->value<std::int64_t>() : std::nullopt;
    if (!in || *in <= 0 || *in > 1'000'000)
      return make_error(errc::invalid_argument, "{}.in (its feature width, 1..1000000) is required",
                        field);
    n.in = int(*in);
    SPINDLE_TRY(parse_embedding(tab, field, n));
    t.node_types.push_back(std::move(n));
  }
  return status::ok();
}

status parse_edge_types(const toml::array& arr, model_types& t) {
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto& tab = *arr.get(i)->as_table();
    const std::string field = fmt::format("edge_type[{}]", i);
    SPINDLE_TRY(only_keys(tab, {"src", "rel", "dst", "fanouts"}, field));
    edge_type_desc e;
    SPINDLE_TRY(read_name(tab, "src", e.src, field));
    SPINDLE_TRY(read_name(tab, "rel", e.rel, field));
    SPINDLE_TRY(read_name(tab, "dst", e.dst, field));
    if (const toml::node* f = tab.get("fanouts")) {
      const toml::array* list = f->as_array();
      if (!list) return make_error(errc::invalid_argument, "{}.fanouts must be a list", field);
      for (const auto& v : *list) {
        auto n = v.value<std::int64_t>();
        if (!n || *n < -1 || *n > 100000)
          return make_error(errc::invalid_argument,
                            "{}.fanouts[{}] = {}: each is 1..100000, 0 (no neighbour of this "
                            "edge type at that hop) or -1 (every neighbour)",
                            field, e.fanouts.size(),
                            n ? fmt::format("{}", *n) : std::string("not an integer"));
        e.fanouts.push_back(int(*n));
      }
    }
    t.edge_types.push_back(std::move(e));
  }
  return status::ok();
}

status parse_outputs(const toml::array& arr, model_types& t) {
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto& tab = *arr.get(i)->as_table();
    const std::string field = fmt::format("output[{}]", i);
    SPINDLE_TRY(only_keys(tab, {"node_type", "value"}, field));
    typed_output o;
    SPINDLE_TRY(read_name(tab, "node_type", o.node_type, field));
    SPINDLE_TRY(read_name(tab, "value", o.value, field));
    t.outputs.push_back(std::move(o));
  }
  return status::ok();
}

// Names unique, edge and output types known.
status check_names(const model_types& t) {
  std::set<std::string> names;
  for (const auto& n : t.node_types)
    if (!names.insert(n.name).second)
      return make_error(errc::invalid_argument, "node_type '{}' is listed twice", n.name);
  std::set<std::array<std::string, 3>> edges;
  for (std::size_t i = 0; i < t.edge_types.size(); ++i) {
    const auto& e = t.edge_types[i];
    for (const auto* end : {&e.src, &e.dst})
      if (!names.count(*end))
        return make_error(errc::invalid_argument, "edge_type[{}]: node type '{}' has no [[node_type]]",
                          i, *end);
    if (!edges.insert({e.src, e.rel, e.dst}).second)
      return make_error(errc::invalid_argument, "edge_type[{}] ({}, {}, {}) is listed twice", i,
                        e.src, e.rel, e.dst);
  }
  std::set<std::string> answered;
  for (const auto& o : t.outputs) {
    if (!names.count(o.node_type))
      return make_error(errc::invalid_argument, "output: node type '{}' has no [[node_type]]",
                        o.node_type);
    if (!answered.insert(o.node_type).second)
      return make_error(errc::invalid_argument, "output: node type '{}' is answered twice",
                        o.node_type);
  }
  if (t.edge_types.empty() || t.outputs.empty())
    return make_error(errc::invalid_argument,
                      "a typed model needs [[edge_type]] and [[output]] tables beside [[node_type]]");
  return status::ok();
}

// What a value is: its node type and message-passing depth.
struct value_info {
  std::string type;
  int depth = 0;
};

// The node type and depth of op `op`'s output from its inputs'; errors name field.
expected<value_info> type_of(gnn_op& op, const model_types& t,
                             const std::map<std::string, value_info>& known,
                             const std::string& field) {
  std::vector<value_info> in;
  for (const auto& name : op.inputs) in.push_back(known.at(name));
  int depth = 0;
  for (const auto& v : in) depth = std::max(depth, v.depth);
  if (!is_message_passing(op.kind)) {
    for (const auto& v : in)
      if (v.type != in[0].type)
        return make_error(errc::invalid_argument, "{} joins values of node types '{}' and '{}'",
                          field, in[0].type, v.type);
    return value_info{in[0].type, depth};
  }
  if (op.relation < 0 || op.relation >= int(t.edge_types.size()))
    return make_error(errc::invalid_argument,
                      "{}.relation = {}: a typed model's message passing names one of its {} "
                      "edge types",
                      field, op.relation, t.edge_types.size());
  const auto& e = t.edge_types[std::size_t(op.relation)];
  const std::string& dst_in = in.size() == 2 ? in[1].type : in[0].type;
  if (in[0].type != e.src || dst_in != e.dst)
    return make_error(errc::invalid_argument,
                      "{} on edge type ({}, {}, {}) reads node types '{}' (sources) and '{}' "
                      "(targets)",
                      field, e.src, e.rel, e.dst, in[0].type, dst_in);
  if (e.src != e.dst && op.kind == op_kind::gat && op.add_self_loops)
    return make_error(errc::invalid_argument,
                      "{}: add_self_loops on a bipartite edge type (PyG refuses it too)", field);
  op.layer = depth;
  return value_info{e.dst, depth + 1};
}

status missing_edge_type(const edge_type_desc& e,
                         std::span<const std::array<std::string, 3>> graph_edges) {
  std::vector<std::string> have, reverse;
  for (const auto& g : graph_edges) {
    have.push_back(fmt::format("({}, {}, {})", g[0], g[1], g[2]));
    if (g[0] == e.dst && g[2] == e.src) reverse.push_back(have.back());
  }
  const std::string hint =
      reverse.empty() || e.src == e.dst
          ? std::string()
          : fmt::format("; the graph holds {} the other way only: PyG's T.ToUndirected() on the "
                        "HeteroData adds the reverse relations (rev_...) a to_hetero model reads, "
                        "before save_graph",
                        fmt::join(reverse, ", "));
  return make_error(errc::invalid_argument,
                    "the model reads edge type ({}, {}, {}), which the graph lacks (it has: {}){}",
                    e.src, e.rel, e.dst, fmt::join(have, ", "), hint);
}

}  // namespace

std::string type_input(std::string_view node_type) { return fmt::format("x.{}", node_type); }

namespace detail {

expected<model_types> parse_types(const toml::table& root, std::string_view origin) {
  model_types t;
  status st = status::ok();
  auto with_origin = [&](status s) { return std::move(s).with_context(fmt::format("{}: ", origin)); };
  if (const auto* a = tables(root, "node_type", origin, st)) {
    if (auto s = parse_node_types(*a, t); !s) return with_origin(std::move(s));
  }
  if (const auto* a = tables(root, "edge_type", origin, st)) {
    if (auto s = parse_edge_types(*a, t); !s) return with_origin(std::move(s));
  }
  if (const auto* a = tables(root, "output", origin, st)) {
    if (auto s = parse_outputs(*a, t); !s) return with_origin(std::move(s));
  }
  SPINDLE_TRY(st);
  const bool any = !t.node_types.empty() || !t.edge_types.empty() || !t.outputs.empty();
  if (any)
    if (auto s = check_names(t); !s) return with_origin(std::move(s));
  return t;
}

}  // namespace detail

expected<int> validate_typed_ops(std::vector<gnn_op>& ops, const model_types& t, int out) {
  if (ops.empty()) return make_error(errc::invalid_argument, "a stack model needs at least one [[op]]");
  std::map<std::string, int> widths;
  std::map<std::string, value_info> known;
  for (const auto& n : t.node_types) {
    widths[type_input(n.name)] = n.in;
    known[type_input(n.name)] = {n.name, 0};
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].inputs.empty())
      return make_error(errc::invalid_argument, "op[{}]: a typed model's ops name their inputs", i);
    if (reads_edge_attr(ops[i]))
      return make_error(errc::invalid_argument,
                        "op[{}] ({}) reads edge attributes; on typed graphs they are not served", i,
                        to_string(ops[i].kind));
  }
  SPINDLE_TRY(detail::validate_chain(ops, widths, "", "op"));
  int hops = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string field = fmt::format("op[{}] ({})", i, to_string(ops[i].kind));
    SPINDLE_ASSIGN_OR_RETURN(auto v, type_of(ops[i], t, known, field));
    hops = std::max(hops, v.depth);
    ops[i].node_type = v.type;
    known[ops[i].name] = std::move(v);
  }
  if (hops == 0) return make_error(errc::invalid_argument, "a stack model needs a message-passing op");
  for (const auto& o : t.outputs) {
    auto it = std::find_if(ops.begin(), ops.end(), [&](const gnn_op& op) { return op.name == o.value; });
    if (it == ops.end())
      return make_error(errc::invalid_argument, "output for '{}': value '{}' is not an op's name",
                        o.node_type, o.value);
    if (known.at(o.value).type != o.node_type)
      return make_error(errc::invalid_argument, "output for '{}': value '{}' holds node type '{}'",
                        o.node_type, o.value, known.at(o.value).type);
    if (it->width != out)
      return make_error(errc::invalid_argument,
                        "output for '{}': value '{}' is {} wide, model.out = {}", o.node_type,
                        o.value, it->width, out);
  }
  return hops;
}

status validate_type_fanouts(const model_types& t, int hops) {
  for (std::size_t i = 0; i < t.edge_types.size(); ++i)
    if (!t.edge_types[i].fanouts.empty() && int(t.edge_types[i].fanouts.size()) != hops)
      return make_error(errc::invalid_argument,
                        "edge_type[{}].fanouts has {} values; the model samples {} hops", i,
                        t.edge_types[i].fanouts.size(), hops);
  return status::ok();
}

expected<std::vector<int>> bind_edge_types(const model_types& t,
                                           std::span<const std::array<std::string, 3>> graph_edges,
                                           std::span<const std::string> graph_node_types,
                                           std::span<const std::int64_t> graph_widths,
                                           std::span<const std::int64_t> graph_counts) {
  for (const auto& n : t.node_types) {
    auto it = std::find(graph_node_types.begin(), graph_node_types.end(), n.name);
    if (it == graph_node_types.end())
      return make_error(errc::invalid_argument,
                        "the model reads node type '{}', which the graph lacks (it has: {})",
                        n.name, fmt::join(graph_node_types, ", "));
    const auto at = std::size_t(it - graph_node_types.begin());
    if (!n.embedding.empty()) {  // its rows come from the table, not the graph's features
      if (!graph_counts.empty() && graph_counts[at] != n.embedding_rows)
        return make_error(errc::invalid_argument,
                          "node type '{}': the model's embedding table {} has {} rows, the graph "
                          "has {} nodes of the type",
                          n.name, n.embedding, n.embedding_rows, graph_counts[at]);
      continue;
    }
    const auto w = graph_widths[at];
    if (w != n.in)
      return make_error(errc::invalid_argument,
                        "node type '{}': the model reads {} feature columns, the graph has {}",
                        n.name, n.in, w);
  }
  std::vector<int> of(graph_edges.size(), -1);
  for (std::size_t r = 0; r < t.edge_types.size(); ++r) {
    const auto& e = t.edge_types[r];
    const std::array<std::string, 3> key{e.src, e.rel, e.dst};
    auto it = std::find(graph_edges.begin(), graph_edges.end(), key);
    if (it == graph_edges.end()) return missing_edge_type(e, graph_edges);
    of[std::size_t(it - graph_edges.begin())] = int(r);
  }
  return of;
}

expected<std::size_t> find_output(const model_types& t, std::string_view node_type) {
  std::vector<std::string> have;
  for (std::size_t i = 0; i < t.outputs.size(); ++i) {
    if (t.outputs[i].node_type == node_type) return i;
    have.push_back(t.outputs[i].node_type);
  }
  return make_error(errc::invalid_argument,
                    "node_type '{}': the model answers seeds of node types {}",
                    std::string(node_type.substr(0, 64)), fmt::join(have, ", "));
}

std::string types_to_toml(const model_types& t) {
  std::string s;
  for (const auto& n : t.node_types) {
    s += fmt::format("\n[[node_type]]\nname = {}\nin = {}\n", detail::toml_string(n.name), n.in);
    if (!n.embedding.empty())
      s += fmt::format("embedding = {}\nembedding_rows = {}\n", detail::toml_string(n.embedding),
                       n.embedding_rows);
  }
  for (const auto& e : t.edge_types) {
    s += fmt::format("\n[[edge_type]]\nsrc = {}\nrel = {}\ndst = {}\n", detail::toml_string(e.src),
                     detail::toml_string(e.rel), detail::toml_string(e.dst));
    if (!e.fanouts.empty()) s += fmt::format("fanouts = [{}]\n", fmt::join(e.fanouts, ", "));
  }
  for (const auto& o : t.outputs)
    s += fmt::format("\n[[output]]\nnode_type = {}\nvalue = {}\n", detail::toml_string(o.node_type),
                     detail::toml_string(o.value));
  return s;
}

}  // namespace spindle::config
