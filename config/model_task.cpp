// model.toml's task and decoder (config/model.hpp): what a GNN's calls ask,
// node rows or link scores, and how a pair's embeddings become its score; a
// typed link model's pair types.
#include <algorithm>

#include "config/detail/model_ops_toml.hpp"
#include "config/model.hpp"

namespace spindle::config {

status validate_task(const model_desc& d, std::string_view origin) {
  if (d.task != "node" && d.task != "link")
    return make_error(errc::invalid_argument, "{}: model.task = '{}': expected node or link",
                      origin, d.task.substr(0, 32));
  if (d.task == "link" && !d.is_gnn())
    return make_error(errc::invalid_argument,
                      "{}: model.task = 'link' is for GNNs; {} scores its samples itself", origin,
                      to_string(d.arch));
  if (d.decoder != "dot" && d.decoder != "ops")
    return make_error(errc::invalid_argument,
                      "{}: model.decoder = '{}': expected dot (the score z_u . z_v) or ops (the "
                      "[[decoder_op]] tables)",
                      origin, d.decoder.substr(0, 32));
  return status::ok();
}

status validate_precision(const model_desc& d, std::string_view origin) {
  if (d.precision == "fp32") return status::ok();
  if (d.precision != "bf16" && d.precision != "int8")
    return make_error(errc::invalid_argument,
                      "{}: model.precision = '{}': expected fp32, bf16 or int8 "
                      "(table_precision = \"int8\" quantises the embedding tables)",
                      origin, d.precision.substr(0, 32));
  if (d.is_gnn() && d.arch != model_arch::stack)
    return make_error(errc::invalid_argument,
                      "{}: model.precision = '{}' runs recommendation models' MLPs (dlrm, ncf, "
                      "wnd, din) and GNN stacks' layers (arch = \"stack\", as export_pyg "
                      "writes); a {} model runs in fp32",
                      origin, d.precision, to_string(d.arch));
  return status::ok();
}

status validate_table_precision(const model_desc& d, std::string_view origin) {
  if (d.table_precision == "fp32") return status::ok();
  if (d.table_precision != "int8" && d.table_precision != "int4")
    return make_error(errc::invalid_argument,
                      "{}: model.table_precision = '{}': expected fp32, int8 or int4", origin,
                      d.table_precision.substr(0, 32));
  if (d.is_gnn())
    return make_error(errc::invalid_argument,
                      "{}: model.table_precision = '{}' quantises recommendation models' embedding "
                      "tables (dlrm, ncf, wnd, din); a {} model's tables stay fp32",
                      origin, d.table_precision, to_string(d.arch));
  return status::ok();
}

status detail::parse_pair_types(const toml::table& model, model_types& t,
                                std::string_view origin) {
  const toml::node* n = model.get("pair_types");
  if (!n) return status::ok();
  const toml::array* a = n->as_array();
  if (!a || a->size() != 2 || !(*a)[0].is_string() || !(*a)[1].is_string())
    return make_error(errc::invalid_argument,
                      "{}: model.pair_types must be two node type names, [\"src\", \"dst\"]",
                      origin);
  for (const auto& v : *a) t.pair_types.push_back(*v.value<std::string>());
  return status::ok();
}

status validate_typed_task(const model_desc& d, std::string_view origin) {
  const auto& pair = d.types.pair_types;
  if (!d.typed()) {
    if (pair.empty()) return status::ok();
    return make_error(errc::invalid_argument,
                      "{}: model.pair_types names node types of a typed model; this model has no "
                      "[[node_type]] tables",
                      origin);
  }
  if (d.arch != model_arch::stack)
    return make_error(errc::invalid_argument,
                      "{}: [[node_type]] tables describe a typed stack model", origin);
  if (d.task == "node") {
    if (pair.empty()) return status::ok();
    return make_error(errc::invalid_argument,
                      "{}: model.pair_types is for task = \"link\" (this model answers nodes)",
                      origin);
  }
  if (pair.size() != 2)
    return make_error(errc::invalid_argument,
                      "{}: a typed link model names the node types of a pair's ends: "
                      "model.pair_types = [\"src\", \"dst\"]",
                      origin);
  for (const auto& name : pair) {
    const auto& outs = d.types.outputs;
    if (std::none_of(outs.begin(), outs.end(), [&](const auto& o) { return o.node_type == name; }))
      return make_error(errc::invalid_argument,
                        "{}: model.pair_types: node type '{}' has no [[output]] (the model's "
                        "embedding of a pair's end)",
                        origin, name.substr(0, 64));
  }
  return status::ok();
}

}  // namespace spindle::config
