// PyG SAGEConv: lin_l(aggr_j x_j) + lin_r(x_i), aggr mean|sum|max|min, with
// project=True's ReLU(lin(x)) before aggregating and normalize=True's L2 norm;
// bipartite on a typed graph's edge type (lin_r reads the target type's rows).
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  const std::int64_t out = op.out;
  if (op.project) {
    s.add("lin.weight", {in, in}, "projection of the neighbours (project=True)");
    s.add("lin.bias", {in}, "projection bias");
  }
  s.add("lin_l.weight", {out, in}, op.aggr + "-aggregated neighbours");
  if (op.bias) s.add("lin_l.bias", {out}, "bias");
  if (op.root_weight)
    s.add("lin_r.weight", {out, config::is_bipartite(op) ? op.in_dst : in}, "root (the node itself)");
}

reduce_op reduce_of(const std::string& aggr) {
  if (aggr == "sum") return reduce_op::sum;
  if (aggr == "max") return reduce_op::max;
  if (aggr == "min") return reduce_op::min;
  return reduce_op::mean;
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  const tensor& h = *x.in[0];
  const tensor* src = &h;
  tensor projected;
  if (op.project) {
    SPINDLE_ASSIGN_OR_RETURN(projected,
                             x.linear(h, "lin.weight", "lin.bias", h.cols()));
    relu_(projected);
    src = &projected;
  }
  SPINDLE_ASSIGN_OR_RETURN(auto agg, propagate(x.a, *x.b, *src, reduce_of(op.aggr), x.pool));
  projected = tensor();
  SPINDLE_ASSIGN_OR_RETURN(auto y, x.linear(agg, "lin_l.weight", "lin_l.bias", op.out));
  if (op.root_weight)
    SPINDLE_TRY(x.linear_accumulate(y, x.dst_input().head(x.b->num_dst), "lin_r.weight"));
  if (op.normalize) l2_normalize_rows_(y);
  return y;
}

}  // namespace

const layer_kind sage{&weights, &forward, &hop_memory};

}  // namespace spindle::nn::layers
