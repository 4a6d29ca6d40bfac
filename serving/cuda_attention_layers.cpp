#include <cmath>

#include "gpu/gnn_kernels.hpp"
#include "serving/detail/cuda_attention.hpp"

namespace spindle::serving::detail {
namespace {

using config::op_kind;

std::size_t floats_of(std::int64_t n) { return (std::size_t(n) * 4 + 255) / 256 * 256; }

// rows of x times W^T plus b (when given), into a new value.
expected<device_value> project(void* blas, void* stream, const device_take& take,
                               const device_value& x, std::int64_t rows, const float* w,
                               const float* b, std::int64_t out) {
  SPINDLE_ASSIGN_OR_RETURN(auto y, take(rows, out));
  SPINDLE_TRY(gpu::gemm_wt_async(blas, x.p, rows, x.cols, w, out, 0.0f, y.p));
  if (b) SPINDLE_TRY(gpu::bias_activation_async(y.p, rows, out, b, gpu::activation::none, stream));
  return y;
}

expected<device_value> res_gated(const config::gnn_op& op, const device_hop& h,
                                 const device_value& in, void* blas, void* stream,
                                 const device_take& take, const device_weight& w) {
  const std::int64_t out = op.out;
  SPINDLE_ASSIGN_OR_RETURN(auto k, project(blas, stream, take, in, h.num_dst, w("lin_key.weight"),
                                           w("lin_key.bias"), out));
  SPINDLE_ASSIGN_OR_RETURN(auto q, project(blas, stream, take, in, h.num_src,
                                           w("lin_query.weight"), w("lin_query.bias"), out));
  SPINDLE_ASSIGN_OR_RETURN(auto v, project(blas, stream, take, in, h.num_src,
                                           w("lin_value.weight"), w("lin_value.bias"), out));
  SPINDLE_ASSIGN_OR_RETURN(auto y, take(h.num_dst, out));
  SPINDLE_TRY(gpu::gated_sum_async(h.indptr, h.indices, k.p, q.p, v.p, h.num_dst, out, y.p, stream));
  if (op.root_weight)  // the dst nodes are the first rows of the input
    SPINDLE_TRY(gpu::gemm_wt_async(blas, in.p, h.num_dst, in.cols, w("lin_skip.weight"), out, 1.0f,
                                   y.p));
  if (op.bias)
    SPINDLE_TRY(gpu::bias_activation_async(y.p, h.num_dst, out, w("bias"), gpu::activation::none,
                                           stream));
  return y;
}

// TransformerConv's root: x_r = lin_skip(x_i) added, or mixed by the beta gate.
status transformer_root(const config::gnn_op& op, const device_hop& h, const device_value& in,
                        device_value& y, void* blas, void* stream, const device_take& take,
                        const device_weight& w) {
  SPINDLE_ASSIGN_OR_RETURN(auto xr, project(blas, stream, take, in, h.num_dst,
                                            w("lin_skip.weight"),
                                            op.bias ? w("lin_skip.bias") : nullptr, y.cols));
  if (op.beta)
    return gpu::beta_mix_async(y.p, xr.p, w("lin_beta.weight"), h.num_dst, y.cols, stream);
  return gpu::combine_async(y.p, xr.p, h.num_dst * y.cols, false, stream);
}

}  // namespace

bool is_attention_op(op_kind k) {
  return k == op_kind::gatv2 || k == op_kind::transformer || k == op_kind::res_gated;
}

std::size_t attention_op_bytes(const config::gnn_op& op, const device_hop& h) {
  const std::int64_t ns = h.num_src, nd = h.num_dst;
  if (op.kind == op_kind::res_gated) return 2 * floats_of(ns * op.out) + 2 * floats_of(nd * op.out);
  const std::int64_t hc = std::int64_t(op.heads) * op.out;
  return 2 * floats_of(ns * hc) + 2 * floats_of(nd * hc) +
         floats_of((h.num_edges + nd) * op.heads) + 2 * floats_of(nd * hc);
}

expected<device_value> attention_op(const config::gnn_op& op, const device_hop& h,
                                    const device_value& in, void* blas, void* stream,
                                    const device_take& take, const device_weight& w) {
  if (op.kind == op_kind::res_gated) return res_gated(op, h, in, blas, stream, take, w);
  const bool v2 = op.kind == op_kind::gatv2;
  const std::int64_t hc = std::int64_t(op.heads) * op.out, c = op.out;
  auto lin = [&](const char* name, std::int64_t rows, bool with_bias) {
    const std::string n(name);
    return project(blas, stream, take, in, rows, w(n + ".weight"),
                   with_bias ? w(n + ".bias") : nullptr, hc);
  };
  // src: x_l or the keys; dst: x_r or the queries; messages: x_l or the values.
  const bool bias = v2 ? op.bias : op.qkv_bias;
  SPINDLE_ASSIGN_OR_RETURN(auto src, lin(v2 ? "lin_l" : "lin_key", h.num_src, bias));
  SPINDLE_ASSIGN_OR_RETURN(auto dst, lin(v2 ? "lin_r" : "lin_query", h.num_dst, bias));
  device_value messages = src;
  if (!v2) {
    SPINDLE_ASSIGN_OR_RETURN(messages, lin("lin_value", h.num_src, bias));
  }
  const gpu::attention_inputs ai{src.p, dst.p, v2 ? w("att") : nullptr, hc, c,
                                 v2 ? op.negative_slope : 1.0f / std::sqrt(float(c)),
                                 v2 ? gpu::attention_score::gatv2 : gpu::attention_score::dot};
  const bool loops = v2 && op.add_self_loops;
  SPINDLE_ASSIGN_OR_RETURN(auto logits, take(h.num_edges + h.num_dst, op.heads));
  SPINDLE_TRY(gpu::attention_logits_async(h.indptr, h.indices, h.num_dst, op.heads, ai, loops,
                                          logits.p, stream));
  SPINDLE_ASSIGN_OR_RETURN(auto y, take(h.num_dst, hc));
  SPINDLE_TRY(gpu::attend_async(h.indptr, h.indices, logits.p, messages.p, h.num_dst, hc, op.heads,
                                loops, y.p, stream));
  if (!op.concat && op.heads > 1) {
    SPINDLE_ASSIGN_OR_RETURN(auto mean, take(h.num_dst, op.out));
    SPINDLE_TRY(gpu::mean_heads_async(y.p, h.num_dst, op.heads, op.out, mean.p, stream));
    y = mean;
  }
  if (!v2) {
    if (op.root_weight) SPINDLE_TRY(transformer_root(op, h, in, y, blas, stream, take, w));
    return y;
  }
  if (op.bias)
    SPINDLE_TRY(gpu::bias_activation_async(y.p, h.num_dst, y.cols, w("bias"),
                                           gpu::activation::none, stream));
  return y;
}

}  // namespace spindle::serving::detail
