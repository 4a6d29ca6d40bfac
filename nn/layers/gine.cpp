// PyG GINEConv's aggregation: (1 + eps) x_i + sum_j ReLU(x_j + e_ji) over the
// block's edges, e_ji = lin(edge_attr_ji) with edge_dim (<prefix>.lin.*), else
// the edge's attributes themselves (as wide as x); eps: the <prefix>.eps tensor,
// else model.toml's. The conv's nn follows as ops of its own, as GINConv's does.
#include "gpu/kernels/activation.hpp"
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  s.add("eps", {1}, "eps (model.toml's when absent)", true);
  if (op.edge_dim > 0) {
    s.add("lin.weight", {in, op.edge_dim}, "projection of the edge attributes (edge_dim)");
    s.add("lin.bias", {in}, "projection bias");
  }
}

// The block's e_ji as a tensor [edges x width]: its attribute rows, projected
// by lin with edge_dim (into `projected`), else borrowed as they are.
expected<tensor> edge_messages(const layer_input& x, std::int64_t width, tensor& projected) {
  const std::int64_t want = x.op.edge_dim > 0 ? x.op.edge_dim : width;
  SPINDLE_ASSIGN_OR_RETURN(auto attr, block_edge_attr(x, want));
  if (x.op.edge_dim == 0) return attr;
  SPINDLE_ASSIGN_OR_RETURN(
      projected, x.linear(attr, "lin.weight", "lin.bias", width));
  return projected.head(attr.rows());
}

expected<tensor> forward(const layer_input& x) {
  const tensor& h = *x.in[0];
  const block& b = *x.b;
  const std::int64_t c = h.cols();
  tensor projected;
  SPINDLE_ASSIGN_OR_RETURN(const tensor e, edge_messages(x, c, projected));
  SPINDLE_ASSIGN_OR_RETURN(auto z, tensor::zeros(x.a, {b.num_dst, c}));
  const auto eps = x.weight("eps");
  const float scale = 1.0f + (eps.empty() ? x.op.eps : eps[0]);
  for_row_chunks(x.pool, b.num_dst, 64, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      float* out = z.row(r);
      for (std::int64_t k = b.indptr[r]; k < b.indptr[r + 1]; ++k) {
        const float* xj = h.row(b.indices[std::size_t(k)]);
        const float* ej = e.row(k);
        for (std::int64_t i = 0; i < c; ++i) out[i] += gpu::relu(xj[i] + ej[i]);
      }
      for (std::int64_t i = 0; i < c; ++i) out[i] += scale * h.row(r)[i];
    }
  });
  return z;
}

// Its output and, with edge_dim, the projected attributes of every edge.
layer_memory memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop) {
  if (!hop) return {};
  layer_memory m{{}, {{hop->num_dst, in}}};
  if (op.edge_dim > 0) {
    m.weights.push_back({in, op.edge_dim + 1});
    m.temp.push_back({hop->num_edges, in});
  }
  return m;
}

}  // namespace

const layer_kind gine{&weights, &forward, &memory};

}  // namespace spindle::nn::layers
