#include "config/model_fields.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace spindle::config {
namespace {

status ignored(const model_desc& d, std::string_view field, const std::string& value,
               std::string_view readers) {
  return make_error(errc::invalid_argument,
                    "model.{} = {}: arch = \"{}\" does not read it ({}); remove it", field, value,
                    to_string(d.arch), readers);
}

template <class T>
std::string listed(const std::vector<T>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// GNN fields on a recommendation model; a recommendation field off the models
// that read it.
status rec_fields(const model_desc& d) {
  constexpr std::string_view gnn = "GNNs read it";
  if (d.log_softmax)
    return ignored(d, "log_softmax", "true", "GNNs read it; a recommendation model answers "
                                             "its own scores");
  if (d.heads != 4) return ignored(d, "heads", std::to_string(d.heads), "arch = \"gat\" reads it");
  if (d.in != 0) return ignored(d, "in", std::to_string(d.in), gnn);
  if (d.hidden != 0) return ignored(d, "hidden", std::to_string(d.hidden), gnn);
  if (d.out != 0) return ignored(d, "out", std::to_string(d.out), gnn);
  if (d.layers != 2) return ignored(d, "layers", std::to_string(d.layers), gnn);
  if (!d.fanouts.empty()) return ignored(d, "fanouts", listed(d.fanouts), gnn);
  if (d.sampling != "shared") return ignored(d, "sampling", "'" + d.sampling + "'", gnn);
  if (!d.attention.empty() && d.arch != model_arch::din)
    return ignored(d, "attention", listed(d.attention), "DIN reads it");
  if (!d.bottom.empty() && d.arch != model_arch::dlrm)
    return ignored(d, "bottom", listed(d.bottom), "DLRM reads it");
  return status::ok();
}

// Recommendation fields on a GNN; heads on a GNN without attention heads; a
// stack's log_softmax (its ops say where it applies).
status gnn_fields(const model_desc& d) {
  constexpr std::string_view rec = "recommendation models (dlrm, ncf, wnd, din) read it";
  if (d.dense_in != 0)
    return ignored(d, "dense_in", std::to_string(d.dense_in), "DLRM and Wide & Deep read it");
  if (!d.bottom.empty()) return ignored(d, "bottom", listed(d.bottom), "DLRM reads it");
  if (!d.top.empty()) return ignored(d, "top", listed(d.top), rec);
  if (d.embedding_dim != 0) return ignored(d, "embedding_dim", std::to_string(d.embedding_dim), rec);
  if (!d.table_rows.empty()) return ignored(d, "table_rows", listed(d.table_rows), rec);
  if (!d.attention.empty()) return ignored(d, "attention", listed(d.attention), "DIN reads it");
  if (d.heads != 4 && d.arch != model_arch::gat && d.arch != model_arch::stack)
    return ignored(d, "heads", std::to_string(d.heads), "arch = \"gat\" reads it");
  if (d.log_softmax && d.arch == model_arch::stack)
    return ignored(d, "log_softmax", "true",
                   "a stack applies it where an [[op]] with kind = \"log_softmax\" says, as "
                   "export_pyg writes it");
  return status::ok();
}

}  // namespace

status validate_arch_fields(const model_desc& d) {
  return d.is_gnn() ? gnn_fields(d) : rec_fields(d);
}

}  // namespace spindle::config
