#include "config/model_ops.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "config/detail/model_ops_toml.hpp"
#include "config/detail/toml_string.hpp"

namespace spindle::config {
namespace {

constexpr std::array<std::string_view, 27> kKindNames = {
    "sage", "gcn",  "gat",     "gin",   "linear", "batch_norm", "layer_norm",
    "relu", "elu",  "leaky_relu", "gelu", "tanh", "sigmoid",   "prelu",
    "add",  "cat",  "max",     "log_softmax", "softmax", "mul",
    "gatv2", "transformer", "res_gated", "gcn_propagate", "scale", "mean", "gine"};

expected<op_kind> parse_kind(std::string_view text, std::string_view field) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == text) return op_kind(i);
  return make_error(errc::invalid_argument, "{}.kind = '{}': expected one of {}", field, text,
                    fmt::join(kKindNames, ", "));
}

// The keys each kind may carry (beyond kind, name, inputs): anything else is a
// setting Spindle would not honour, so it is refused.
const std::set<std::string_view>& keys_for(op_kind k) {
  static const std::map<op_kind, std::set<std::string_view>> keys = {
      {op_kind::sage, {"prefix", "in", "out", "aggr", "normalize", "root_weight", "project", "bias", "relation"}},
      {op_kind::gcn, {"prefix", "in", "out", "add_self_loops", "normalize", "improved", "bias", "norm"}},
      {op_kind::gat, {"prefix", "in", "out", "heads", "concat", "negative_slope", "add_self_loops", "bias", "relation", "edge_dim"}},
      {op_kind::gin, {"prefix", "in", "eps"}},
      {op_kind::gine, {"prefix", "in", "eps", "edge_dim"}},
      {op_kind::gatv2, {"prefix", "in", "out", "heads", "concat", "negative_slope", "add_self_loops", "bias", "edge_dim"}},
      {op_kind::transformer, {"prefix", "in", "out", "heads", "concat", "beta", "root_weight", "bias", "qkv_bias", "edge_dim"}},
      {op_kind::res_gated, {"prefix", "in", "out", "root_weight", "bias", "qkv_bias"}},
      {op_kind::gcn_propagate, {"add_self_loops", "normalize", "norm"}},
      {op_kind::linear, {"prefix", "in", "out", "bias"}},
      {op_kind::batch_norm, {"prefix", "in", "eps", "affine"}},
      {op_kind::layer_norm, {"prefix", "in", "eps", "affine"}},
      {op_kind::elu, {"alpha"}},
      {op_kind::scale, {"alpha"}},
      {op_kind::leaky_relu, {"negative_slope"}},
      {op_kind::gelu, {"approximate"}},
      {op_kind::prelu, {"prefix", "channels"}},
  };
  static const std::set<std::string_view> none;
  auto it = keys.find(k);
  return it == keys.end() ? none : it->second;
}

template <class T>
status read(const toml::table& t, std::string_view key, T& out, const std::string& field) {
  const toml::node* n = t.get(key);
  if (!n) return status::ok();
  if constexpr (std::is_same_v<T, bool>) {
    auto v = n->value<bool>();
    if (!v) return make_error(errc::invalid_argument, "{}.{} must be true or false", field, key);
    out = *v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    auto v = n->value<std::string>();
    if (!v) return make_error(errc::invalid_argument, "{}.{} must be a string", field, key);
    out = *v;
  } else if constexpr (std::is_same_v<T, float>) {
    auto v = n->value<double>();
    if (!v || !std::isfinite(*v))
      return make_error(errc::invalid_argument, "{}.{} must be a finite number", field, key);
    out = float(*v);
  } else {
    auto v = n->value<std::int64_t>();
    if (!v || *v < 0 || *v > 1'000'000)
      return make_error(errc::invalid_argument, "{}.{} must be an integer in 0..1000000", field, key);
    out = T(*v);
  }
  return status::ok();
}

expected<gnn_op> parse_op(const toml::table& t, const std::string& field) {
  gnn_op op;
  std::string kind;
  SPINDLE_TRY(read(t, "kind", kind, field));
  if (kind.empty()) return make_error(errc::invalid_argument, "{}.kind is required", field);
  SPINDLE_ASSIGN_OR_RETURN(op.kind, parse_kind(kind, field));
  const auto& allowed = keys_for(op.kind);
  for (auto&& [k, _] : t) {
    const std::string_view key = k.str();
    if (key != "kind" && key != "name" && key != "inputs" && !allowed.count(key))
      return make_error(errc::invalid_argument, "{}.{}: not a setting of {} that Spindle honours",
                        field, key, kind);
  }
  if (op.kind == op_kind::leaky_relu) op.negative_slope = 0.01f;
  if (op.kind == op_kind::gin || op.kind == op_kind::gine) op.eps = 0.0f;
  if (is_gcn_normalised(op.kind)) op.normalize = true;  // GCNConv's default (SAGEConv's is false)
  SPINDLE_TRY(read(t, "name", op.name, field));
  if (const toml::node* n = t.get("inputs")) {
    const toml::array* arr = n->as_array();
    if (!arr) return make_error(errc::invalid_argument, "{}.inputs must be a list of names", field);
    for (const auto& e : *arr) {
      auto v = e.value<std::string>();
      if (!v) return make_error(errc::invalid_argument, "{}.inputs must hold names", field);
      op.inputs.push_back(*v);
    }
  }
  SPINDLE_TRY(read(t, "prefix", op.prefix, field));
  SPINDLE_TRY(read(t, "in", op.in, field));
  SPINDLE_TRY(read(t, "out", op.out, field));
  SPINDLE_TRY(read(t, "aggr", op.aggr, field));
  SPINDLE_TRY(read(t, "normalize", op.normalize, field));
  SPINDLE_TRY(read(t, "root_weight", op.root_weight, field));
  SPINDLE_TRY(read(t, "project", op.project, field));
  SPINDLE_TRY(read(t, "bias", op.bias, field));
  SPINDLE_TRY(read(t, "add_self_loops", op.add_self_loops, field));
  SPINDLE_TRY(read(t, "improved", op.improved, field));
  SPINDLE_TRY(read(t, "heads", op.heads, field));
  SPINDLE_TRY(read(t, "concat", op.concat, field));
  SPINDLE_TRY(read(t, "beta", op.beta, field));
  SPINDLE_TRY(read(t, "qkv_bias", op.qkv_bias, field));
  if (op.beta && !op.root_weight)
    return make_error(errc::invalid_argument,
                      "{}.beta = true gates the root term, and root_weight = false has none", field);
  SPINDLE_TRY(read(t, "negative_slope", op.negative_slope, field));
  SPINDLE_TRY(read(t, "alpha", op.alpha, field));
  SPINDLE_TRY(read(t, "eps", op.eps, field));
  SPINDLE_TRY(read(t, "affine", op.affine, field));
  SPINDLE_TRY(read(t, "channels", op.channels, field));
  SPINDLE_TRY(read(t, "edge_dim", op.edge_dim, field));
  if (t.get("relation")) SPINDLE_TRY(read(t, "relation", op.relation, field));
  if (op.relation >= 0 && op.project)
    return make_error(errc::invalid_argument, "{}: project = true on an edge type is not served",
                      field);
  std::string norm = "graph", approximate = "none";
  SPINDLE_TRY(read(t, "norm", norm, field));
  SPINDLE_TRY(read(t, "approximate", approximate, field));
  if (norm != "graph" && norm != "block")
    return make_error(errc::invalid_argument, "{}.norm = '{}': expected graph or block", field, norm);
  op.norm = norm == "graph" ? gcn_norm::graph : gcn_norm::block;
  if (approximate != "none" && approximate != "tanh")
    return make_error(errc::invalid_argument, "{}.approximate = '{}': expected none or tanh", field,
                      approximate);
  op.approximate_tanh = approximate == "tanh";
  if (op.kind == op_kind::sage && op.aggr != "mean" && op.aggr != "sum" && op.aggr != "max" &&
      op.aggr != "min")
    return make_error(errc::invalid_argument,
                      "{}.aggr = '{}': Spindle computes SAGEConv with mean, sum, max or min", field,
                      op.aggr);
  return op;
}

}  // namespace

std::string_view to_string(op_kind k) { return kKindNames[std::size_t(k)]; }

bool is_message_passing(op_kind k) {
  return k == op_kind::sage || k == op_kind::gcn || k == op_kind::gat || k == op_kind::gin ||
         k == op_kind::gatv2 || k == op_kind::transformer || k == op_kind::res_gated ||
         k == op_kind::gcn_propagate || k == op_kind::gine;
}

bool is_gcn_normalised(op_kind k) { return k == op_kind::gcn || k == op_kind::gcn_propagate; }

namespace detail {

expected<std::vector<gnn_op>> parse_ops(const toml::array& ops, std::string_view origin) {
  std::vector<gnn_op> out;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string field = fmt::format("op[{}]", i);
    const toml::table* t = ops.get(i)->as_table();
    if (!t) return make_error(errc::invalid_argument, "{}: {} must be a table", origin, field);
    auto op = parse_op(*t, field);
    if (!op) return std::move(op).error().with_context(fmt::format("{}: ", origin));
    out.push_back(std::move(*op));
  }
  return out;
}

}  // namespace detail

namespace {

// The width `op` produces from its inputs' widths; errors name the op.
expected<int> output_width(const gnn_op& op, const std::vector<int>& in, const std::string& field) {
  auto needs_in = [&](int w) -> status {
    if (op.in > 0 && op.in != w)
      return make_error(errc::invalid_argument, "{}.in = {}, but its input is {} wide", field,
                        op.in, w);
    return status::ok();
  };
  auto positive_out = [&]() -> status {
    return op.out > 0 ? status::ok()
                      : make_error(errc::invalid_argument, "{}.out must be > 0", field);
  };
  const int w = in.empty() ? 0 : in[0];
  switch (op.kind) {
    case op_kind::add:
    case op_kind::max:
    case op_kind::mul:
    case op_kind::mean:
      for (int x : in)
        if (x != w)
          return make_error(errc::invalid_argument, "{} ({}) joins inputs of widths {}", field,
                            to_string(op.kind), fmt::join(in, ", "));
      return w;
    case op_kind::cat: {
      int sum = 0;
      for (int x : in) sum += x;
      return sum;
    }
    case op_kind::sage:
    case op_kind::gcn:
    case op_kind::res_gated:
    case op_kind::linear:
      SPINDLE_TRY(needs_in(w));
      SPINDLE_TRY(positive_out());
      return op.out;
    case op_kind::gat:
    case op_kind::gatv2:
    case op_kind::transformer:
      SPINDLE_TRY(needs_in(w));
      SPINDLE_TRY(positive_out());
      if (op.heads <= 0) return make_error(errc::invalid_argument, "{}.heads must be > 0", field);
      if (std::int64_t(op.heads) * op.out > 1'000'000)
        return make_error(errc::invalid_argument, "{}: heads x out = {} x {} exceeds 1000000 columns",
                          field, op.heads, op.out);
      return op.concat ? op.heads * op.out : op.out;
    case op_kind::prelu:
      if (op.channels != 1 && op.channels != w)
        return make_error(errc::invalid_argument, "{}.channels = {}: expected 1 or the width {}",
                          field, op.channels, w);
      return w;
    default:
      SPINDLE_TRY(needs_in(w));
      return w;
  }
}

bool needs_prefix(op_kind k) {
  return (is_message_passing(k) && k != op_kind::gcn_propagate) || k == op_kind::linear || k == op_kind::batch_norm ||
         k == op_kind::layer_norm || k == op_kind::prelu;
}

}  // namespace

namespace detail {

status validate_chain(std::vector<gnn_op>& ops, std::map<std::string, int> widths,
                      std::string previous, std::string_view what) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto& op = ops[i];
    const std::string field = fmt::format("{}[{}] ({})", what, i, to_string(op.kind));
    if (op.name.empty()) op.name = fmt::format("{}{}", what == "op" ? "op" : "decoder", i);
    if (widths.count(op.name))
      return make_error(errc::invalid_argument, "{}.name = '{}' is already taken", field, op.name);
    if (op.inputs.empty()) op.inputs = {previous};
    const bool join = op.kind == op_kind::add || op.kind == op_kind::cat ||
                      op.kind == op_kind::max || op.kind == op_kind::mul || op.kind == op_kind::mean;
    if (!join && op.inputs.size() != 1 && !(op.relation >= 0 && op.inputs.size() == 2))
      return make_error(errc::invalid_argument, "{} takes one input, got {}", field,
                        op.inputs.size());
    if (join && op.inputs.size() < 2)
      return make_error(errc::invalid_argument, "{} joins at least two inputs", field);
    std::vector<int> in_widths;
    for (const auto& name : op.inputs) {
      auto it = widths.find(name);
      if (it == widths.end())
        return make_error(errc::invalid_argument, "{}.inputs: '{}' is not an earlier op's name",
                          field, name);
      in_widths.push_back(it->second);
    }
    if (needs_prefix(op.kind) && op.prefix.empty())
      return make_error(errc::invalid_argument, "{}.prefix (its tensors' name prefix) is required",
                        field);
    SPINDLE_ASSIGN_OR_RETURN(op.width, output_width(op, in_widths, field));
    if (is_bipartite(op)) op.in_dst = in_widths[1];
    widths[op.name] = op.width;
    previous = op.name;
  }
  return status::ok();
}

}  // namespace detail
using detail::validate_chain;

expected<int> validate_ops(std::vector<gnn_op>& ops, int in, int out) {
  if (ops.empty())
    return make_error(errc::invalid_argument, "a stack model needs at least one [[op]]");
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].relation >= 0)
      return make_error(errc::invalid_argument,
                        "op[{}].relation = {}: the model has no [[edge_type]] tables (an untyped "
                        "graph's ops read every edge)",
                        i, ops[i].relation);
  SPINDLE_TRY(validate_chain(ops, {{"x", in}}, "x", "op"));
  for (std::size_t i = 0; i + 1 < ops.size(); ++i)  // a call's "output" is the last op's value
    if (ops[i].name == "output")
      return make_error(errc::invalid_argument,
                        "op[{}].name = 'output' is the model's output's name; only the last op "
                        "may take it",
                        i);
  int hops = 0;
  for (const auto& op : ops) hops += is_message_passing(op.kind);
  int graph_norm = 0, block_norm = 0;
  for (const auto& op : ops)
    if (is_gcn_normalised(op.kind) && op.normalize) (op.norm == gcn_norm::graph ? graph_norm : block_norm)++;
  if (graph_norm && block_norm)
    return make_error(errc::invalid_argument,
                      "GCN ops normalise by the graph's degrees ({}) and by the block's ({}): one "
                      "kind per model",
                      graph_norm, block_norm);
  if (hops == 0)
    return make_error(errc::invalid_argument, "a stack model needs a message-passing op");
  if (ops.back().width != out)
    return make_error(errc::invalid_argument, "the last op produces {} columns, model.out = {}",
                      ops.back().width, out);
  return hops;
}

status validate_decoder_ops(std::vector<gnn_op>& ops, int width) {
  if (ops.empty())
    return make_error(errc::invalid_argument, "a decoder needs at least one [[decoder_op]]");
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (is_message_passing(ops[i].kind))
      return make_error(errc::invalid_argument,
                        "decoder_op[{}] ({}): a decoder reads the pair's two embeddings; it has "
                        "no graph to pass messages over",
                        i, to_string(ops[i].kind));
  SPINDLE_TRY(validate_chain(ops, {{"z_src", width}, {"z_dst", width}}, "z_src", "decoder_op"));
  if (ops.back().width != 1)
    return make_error(errc::invalid_argument,
                      "the last decoder_op produces {} columns; a pair's score is 1", ops.back().width);
  return status::ok();
}

bool reads_edge_attr(const gnn_op& op) { return op.kind == op_kind::gine || op.edge_dim > 0; }

bool reads_edge_attr(const std::vector<gnn_op>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const gnn_op& op) { return reads_edge_attr(op); });
}

status check_edge_attr(const std::vector<gnn_op>& ops, std::int64_t cols,
                       std::string_view dataset) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    if (!reads_edge_attr(op)) continue;
    if (cols <= 0)
      return make_error(errc::invalid_argument,
                        "op[{}] ({}, {}) reads edge attributes, and dataset {} has none "
                        "(edge_attr.npy: prepare it from a save_graph folder whose graph has "
                        "edge_attr)",
                        i, to_string(op.kind), op.prefix, dataset);
    const std::int64_t want = op.edge_dim > 0 ? op.edge_dim : op.width;
    if (cols != want)
      return make_error(errc::invalid_argument,
                        "op[{}] ({}, {}) reads edge attributes {} wide ({}), and dataset {} has "
                        "{} columns (edge_attr.npy)",
                        i, to_string(op.kind), op.prefix, want,
                        op.edge_dim > 0 ? "its edge_dim" : "no edge_dim: as wide as its input",
                        dataset, cols);
  }
  return status::ok();
}

std::string ops_to_toml(const std::vector<gnn_op>& ops, std::string_view table) {
  std::string s;
  for (const auto& op : ops) {
    s += fmt::format("\n[[{}]]\nkind = \"{}\"\nname = {}\ninputs = {}\n", table,
                     to_string(op.kind), detail::toml_string(op.name),
                     detail::toml_strings(op.inputs));
    const auto& keys = keys_for(op.kind);
    auto has = [&](std::string_view k) { return keys.count(k) > 0; };
    if (has("prefix")) s += fmt::format("prefix = {}\n", detail::toml_string(op.prefix));
    if (has("in") && op.in) s += fmt::format("in = {}\n", op.in);
    if (has("out")) s += fmt::format("out = {}\n", op.out);
    if (has("aggr")) s += fmt::format("aggr = {}\n", detail::toml_string(op.aggr));
    if (has("normalize")) s += fmt::format("normalize = {}\n", op.normalize);
    if (has("root_weight")) s += fmt::format("root_weight = {}\n", op.root_weight);
    if (has("project")) s += fmt::format("project = {}\n", op.project);
    if (has("bias")) s += fmt::format("bias = {}\n", op.bias);
    if (has("add_self_loops")) s += fmt::format("add_self_loops = {}\n", op.add_self_loops);
    if (has("improved")) s += fmt::format("improved = {}\n", op.improved);
    if (has("norm")) s += fmt::format("norm = \"{}\"\n", op.norm == gcn_norm::graph ? "graph" : "block");
    if (has("heads")) s += fmt::format("heads = {}\nconcat = {}\n", op.heads, op.concat);
    if (has("beta")) s += fmt::format("beta = {}\n", op.beta);
    if (has("qkv_bias")) s += fmt::format("qkv_bias = {}\n", op.qkv_bias);
    if (has("negative_slope")) s += fmt::format("negative_slope = {}\n", op.negative_slope);
    if (has("alpha")) s += fmt::format("alpha = {}\n", op.alpha);
    if (has("eps")) s += fmt::format("eps = {}\n", op.eps);
    if (has("affine")) s += fmt::format("affine = {}\n", op.affine);
    if (has("approximate")) s += fmt::format("approximate = \"{}\"\n", op.approximate_tanh ? "tanh" : "none");
    if (has("channels")) s += fmt::format("channels = {}\n", op.channels);
    if (has("edge_dim") && op.edge_dim) s += fmt::format("edge_dim = {}\n", op.edge_dim);
    if (has("relation") && op.relation >= 0) s += fmt::format("relation = {}\n", op.relation);
  }
  return s;
}

}  // namespace spindle::config
