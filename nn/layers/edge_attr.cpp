// The edge attributes a layer reads from its block: as they are (GINEConv
// without edge_dim), or projected by the layer's lin_edge (the attention
// layers' edge_dim, no bias in PyG's builds).
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {

expected<tensor> block_edge_attr(const layer_input& x, std::int64_t cols) {
  const block& b = *x.b;
  const std::int64_t edges = b.indptr[b.num_dst], k = b.edge_attr_cols;
  if (k != cols || std::int64_t(b.edge_attr.size()) < edges * k)
    return make_error(errc::invalid_argument,
                      "{} ({}): its block has {} edges and {} edge attribute values of {} "
                      "columns; it reads {} columns per edge",
                      config::to_string(x.op.kind), x.op.prefix, edges, b.edge_attr.size(), k,
                      cols);
  return tensor::borrow(const_cast<float*>(b.edge_attr.data()), {edges, k});
}

expected<tensor> project_edge_attr(const layer_input& x, std::int64_t width) {
  SPINDLE_ASSIGN_OR_RETURN(auto attr, block_edge_attr(x, x.op.edge_dim));
  return x.linear(attr, "lin_edge.weight", "", width);
}

void add_edge_projection(const config::gnn_op& op, weight_list& s) {
  if (op.edge_dim <= 0) return;
  s.add("lin_edge.weight", {std::int64_t(op.heads) * op.out, op.edge_dim},
        "projection of the edge attributes (edge_dim)");
}

void add_edge_memory(const config::gnn_op& op, const hop_dims* hop, layer_memory& m) {
  if (op.edge_dim <= 0 || !hop) return;
  const std::int64_t hc = std::int64_t(op.heads) * op.out;
  m.weights.push_back({hc, op.edge_dim});
  m.temp.push_back({hop->num_edges, hc});
}

}  // namespace spindle::nn::layers
