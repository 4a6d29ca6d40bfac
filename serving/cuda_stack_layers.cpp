// A stack model's forward pass on the GPU (serving::device_model): the ops of
// nn/model_stack.cpp with the same semantics, every buffer from the arena and
// every kernel and GEMM on its stream. Message-passing ops take one block each;
// a value keeps its block's rows, and joins take the first rows of each input.
// In-place ops (norms, activations) write over their input at its last use and
// over a copy otherwise. log_softmax / softmax, last only, run on the host after
// the download. Per-element logic is gpu/kernels/'s, shared with the host.
#include <map>

#include "gpu/gnn_kernels.hpp"
#include "serving/cuda_layers.hpp"
#include "serving/detail/arena_put.hpp"
#include "serving/detail/cuda_attention.hpp"

namespace spindle::serving {
namespace {

using config::gnn_op;
using config::op_kind;
using detail::put;

using dvalue = detail::device_value;

std::size_t aligned(std::size_t b) { return (b + 255) / 256 * 256; }
std::size_t floats(std::int64_t n) { return aligned(std::size_t(n) * 4); }

// The arena bytes op `op` takes beyond its block's CSR: its output and scratch
// (an upper bound the pass below stays within; the arena frees nothing in a pass).
std::size_t op_bytes(const gnn_op& op, std::int64_t in_cols, std::int64_t in_rows,
                     std::int64_t num_src, std::int64_t num_dst, std::int64_t num_edges) {
  if (detail::is_attention_op(op.kind))
    return detail::attention_op_bytes(op, {nullptr, nullptr, num_src, num_dst, num_edges});
  switch (op.kind) {
    case op_kind::sage:
      return (op.project ? floats(num_src * in_cols) : 0) + floats(num_dst * in_cols) +
             floats(num_dst * op.width);
    case op_kind::gcn:
      return floats(num_src * op.out) + floats(num_dst * op.width);
    case op_kind::gcn_propagate:
      return floats(num_dst * op.width);
    case op_kind::gat:
      return floats(num_src * op.heads * op.out) + floats(num_src * op.heads) +
             floats(num_dst * op.heads) + floats(num_dst * op.heads * op.out) +
             floats(num_dst * op.width);
    case op_kind::gin:
      return floats(num_dst * op.width);
    case op_kind::log_softmax:
    case op_kind::softmax:
      return 0;
    default:
      return floats(in_rows * op.width);
  }
}

}  // namespace

std::size_t device_model::stack_arena_bytes(const config::model_desc& d,
                                            std::span<const nn::block> blocks, std::int64_t x_rows,
                                            std::size_t degree_bytes) {
  std::size_t total = floats(x_rows * d.in) + aligned(degree_bytes);
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> v{{"x", {x_rows, d.in}}};
  std::size_t hop = 0;
  for (const auto& op : d.ops) {
    std::int64_t rows = v.at(op.inputs[0]).first;
    for (const auto& in : op.inputs) rows = std::min(rows, v.at(in).first);
    const std::int64_t in_cols = v.at(op.inputs[0]).second;
    std::int64_t ns = 0, nd = rows, ne = 0;
    if (config::is_message_passing(op.kind) && hop < blocks.size()) {
      const auto& b = blocks[hop++];
      total += aligned(b.indptr.size_bytes()) + aligned(b.indices.size_bytes());
      ns = b.num_src, nd = b.num_dst, ne = b.num_edges();
    }
    total += op_bytes(op, in_cols, rows, ns, nd, ne);
    v[op.name] = {config::is_message_passing(op.kind) ? nd : rows, op.width};
  }
  return total;
}

expected<nn::tensor> device_model::forward_stack(gpu::device_arena& arena, void* blas,
                                                 nn::allocator& a, std::span<const nn::block> blocks,
                                                 std::span<const float> degree, const nn::tensor& x,
                                                 const float* x_device) const {
  const auto& d = model_->desc();
  void* const stream = arena.stream();
  SPINDLE_TRY(gpu::blas_set_stream(blas, stream));
  auto take = [&](std::int64_t rows, std::int64_t cols) -> expected<dvalue> {
    SPINDLE_ASSIGN_OR_RETURN(float* p, arena.take_n<float>(std::size_t(rows * cols)));
    return dvalue{p, rows, cols};
  };
  std::map<std::string, dvalue> values;
  {
    const void* h = x_device;
    if (!h) {
      SPINDLE_ASSIGN_OR_RETURN(h, put(arena, x.data(), std::size_t(x.numel()) * 4));
    }
    values["x"] = {const_cast<float*>(static_cast<const float*>(h)), x.rows(), x.cols()};
  }
  const float* neighbours = nullptr;
  if (model_->needs_degrees()) {
    SPINDLE_ASSIGN_OR_RETURN(void* p, put(arena, degree.data(), degree.size_bytes()));
    neighbours = static_cast<const float*>(p);
  }
  std::map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < d.ops.size(); ++i)
    for (const auto& in : d.ops[i].inputs) last_use[in] = i;
  std::size_t hop = 0;
  bool host_softmax = false, host_log = false;
  for (std::size_t i = 0; i < d.ops.size(); ++i) {
    const auto& op = d.ops[i];
    auto w = [&](std::string_view rest) { return tensor(op.prefix + "." + std::string(rest)); };
    const dvalue in = values.at(op.inputs[0]);
    dvalue y;
    if (config::is_message_passing(op.kind)) {
      const auto& b = blocks[hop++];
      SPINDLE_ASSIGN_OR_RETURN(void* ip, put(arena, b.indptr.data(), b.indptr.size_bytes()));
      SPINDLE_ASSIGN_OR_RETURN(void* ix, put(arena, b.indices.data(), b.indices.size_bytes()));
      const auto* indptr = static_cast<const std::int64_t*>(ip);
      const auto* indices = static_cast<const std::int32_t*>(ix);
      const std::int64_t ns = b.num_src, nd = b.num_dst, cin = in.cols;
      if (op.kind == op_kind::sage) {
        const float* src = in.p;
        if (op.project) {
          SPINDLE_ASSIGN_OR_RETURN(auto p, take(ns, cin));
          SPINDLE_TRY(gpu::gemm_wt_async(blas, in.p, ns, cin, w("lin.weight"), cin, 0.0f, p.p));
          SPINDLE_TRY(gpu::bias_activation_async(p.p, ns, cin, w("lin.bias"), gpu::activation::relu,
                                                 stream));
          src = p.p;
        }
        const auto reduce = op.aggr == "sum"   ? gpu::spmm_reduce::sum
                            : op.aggr == "max" ? gpu::spmm_reduce::max
                            : op.aggr == "min" ? gpu::spmm_reduce::min
                                               : gpu::spmm_reduce::mean;
        SPINDLE_ASSIGN_OR_RETURN(auto agg, take(nd, cin));
        SPINDLE_TRY(gpu::spmm_async(indptr, indices, src, nd, cin, reduce, agg.p, stream));
        SPINDLE_ASSIGN_OR_RETURN(y, take(nd, op.out));
        SPINDLE_TRY(gpu::gemm_wt_async(blas, agg.p, nd, cin, w("lin_l.weight"), op.out, 0.0f, y.p));
        if (op.root_weight)  // the dst nodes are the first rows of the input
          SPINDLE_TRY(gpu::gemm_wt_async(blas, in.p, nd, cin, w("lin_r.weight"), op.out, 1.0f, y.p));
        if (op.bias)
          SPINDLE_TRY(gpu::bias_activation_async(y.p, nd, op.out, w("lin_l.bias"),
                                                 gpu::activation::none, stream));
        if (op.normalize)
          SPINDLE_TRY(gpu::row_op_async(gpu::row_op::l2_normalize, y.p, nd, op.out, nullptr,
                                        nullptr, nullptr, nullptr, 0, false, stream));
      } else if (config::is_gcn_normalised(op.kind)) {  // gcn: projected first
        dvalue h = in;
        if (op.kind == op_kind::gcn) {
          SPINDLE_ASSIGN_OR_RETURN(h, take(ns, op.out));
          SPINDLE_TRY(gpu::gemm_wt_async(blas, in.p, ns, cin, w("lin.weight"), op.out, 0.0f, h.p));
        }
        SPINDLE_ASSIGN_OR_RETURN(y, take(nd, h.cols));
        if (op.normalize) {
          const float fill = op.add_self_loops ? (op.improved ? 2.0f : 1.0f) : 0.0f;
          SPINDLE_TRY(gpu::gcn_aggregate_ex_async(indptr, indices, h.p, neighbours, fill, nd,
                                                  h.cols, y.p, stream));
        } else {
          SPINDLE_TRY(gpu::spmm_async(indptr, indices, h.p, nd, h.cols, gpu::spmm_reduce::sum,
                                      y.p, stream));
        }
        if (op.kind == op_kind::gcn && op.bias)
          SPINDLE_TRY(gpu::bias_activation_async(y.p, nd, op.out, w("bias"),
                                                 gpu::activation::none, stream));
      } else if (op.kind == op_kind::gat) {  // add_self_loops (supports() checked)
        const std::int64_t hc = std::int64_t(op.heads) * op.out;
        SPINDLE_ASSIGN_OR_RETURN(auto h, take(ns, hc));
        SPINDLE_ASSIGN_OR_RETURN(auto s_src, take(ns, op.heads));
        SPINDLE_ASSIGN_OR_RETURN(auto s_dst, take(nd, op.heads));
        SPINDLE_TRY(gpu::gemm_wt_async(blas, in.p, ns, cin, w("lin_src.weight"), hc, 0.0f, h.p));
        SPINDLE_TRY(gpu::gat_scores_async(h.p, ns, hc, op.heads, w("att_src"), s_src.p, stream));
        SPINDLE_TRY(gpu::gat_scores_async(h.p, nd, hc, op.heads, w("att_dst"), s_dst.p, stream));
        SPINDLE_ASSIGN_OR_RETURN(auto all, take(nd, hc));
        SPINDLE_TRY(gpu::gat_aggregate_async(indptr, indices, h.p, nd, hc, op.heads, s_src.p,
                                             s_dst.p, op.negative_slope, all.p, stream));
        y = all;
        if (!op.concat && op.heads > 1) {
          SPINDLE_ASSIGN_OR_RETURN(y, take(nd, op.out));
          SPINDLE_TRY(gpu::mean_heads_async(all.p, nd, op.heads, op.out, y.p, stream));
        }
        if (op.bias)
          SPINDLE_TRY(gpu::bias_activation_async(y.p, nd, y.cols, w("bias"),
                                                 gpu::activation::none, stream));
      } else if (detail::is_attention_op(op.kind)) {
        const detail::device_hop h{indptr, indices, ns, nd, b.num_edges()};
        SPINDLE_ASSIGN_OR_RETURN(y, detail::attention_op(op, h, in, blas, stream, take, w));
      } else if (op.kind == op_kind::gin) {  // (1 + eps) x_i + sum_j x_j
        const auto eps_name = op.prefix + ".eps";
        const float scale =
            1.0f + (model_->has_param(eps_name) ? model_->param(eps_name).data()[0] : op.eps);
        SPINDLE_ASSIGN_OR_RETURN(y, take(nd, cin));
        SPINDLE_TRY(gpu::spmm_async(indptr, indices, in.p, nd, cin, gpu::spmm_reduce::sum, y.p,
                                    stream));
        SPINDLE_TRY(gpu::gin_combine_async(y.p, in.p, nd, cin, scale, stream));
      } else {  // supports() keeps such a model on the host
        return make_error(errc::unsupported, "op {} ({}) has no device path", i,
                          config::to_string(op.kind));
      }
    } else if (op.kind == op_kind::linear) {
      SPINDLE_ASSIGN_OR_RETURN(y, take(in.rows, op.out));
      SPINDLE_TRY(gpu::gemm_wt_async(blas, in.p, in.rows, in.cols, w("weight"), op.out, 0.0f, y.p));
      if (op.bias)
        SPINDLE_TRY(gpu::bias_activation_async(y.p, in.rows, op.out, w("bias"),
                                               gpu::activation::none, stream));
    } else if (op.kind == op_kind::add || op.kind == op_kind::max || op.kind == op_kind::cat) {
      std::int64_t rows = in.rows;
      for (const auto& name : op.inputs) rows = std::min(rows, values.at(name).rows);
      SPINDLE_ASSIGN_OR_RETURN(y, take(rows, op.width));
      std::int64_t offset = 0;
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const auto& v = values.at(op.inputs[k]);
        if (op.kind == op_kind::cat || k == 0) {
          SPINDLE_TRY(gpu::copy_cols_async(y.p, y.cols, offset, v.p, v.cols, rows, stream));
          if (op.kind == op_kind::cat) offset += v.cols;
        } else {  // the first rows of a row-major value are contiguous
          SPINDLE_TRY(gpu::combine_async(y.p, v.p, rows * v.cols, op.kind == op_kind::max, stream));
        }
      }
    } else if (op.kind == op_kind::log_softmax || op.kind == op_kind::softmax) {
      (op.kind == op_kind::softmax ? host_softmax : host_log) = true;  // last op: on the host
      y = in;
    } else {  // in place: over the input at its last use, else over a copy
      y = in;
      if (op.inputs[0] == "x" || last_use.at(op.inputs[0]) != i) {
        SPINDLE_ASSIGN_OR_RETURN(y, take(in.rows, in.cols));
        SPINDLE_TRY(gpu::copy_cols_async(y.p, y.cols, 0, in.p, in.cols, in.rows, stream));
      }
      const std::int64_t n = y.rows * y.cols;
      switch (op.kind) {
        case op_kind::batch_norm:
          SPINDLE_TRY(gpu::row_op_async(gpu::row_op::batch_norm, y.p, y.rows, y.cols,
                                        w("running_mean"), w("running_var"), w("weight"),
                                        w("bias"), op.eps, true, stream));
          break;
        case op_kind::layer_norm:
          SPINDLE_TRY(gpu::row_op_async(gpu::row_op::layer_norm, y.p, y.rows, y.cols, nullptr,
                                        nullptr, w("weight"), w("bias"), op.eps, true, stream));
          break;
        case op_kind::prelu:
          SPINDLE_TRY(gpu::row_op_async(gpu::row_op::prelu, y.p, y.rows, y.cols, nullptr, nullptr,
                                        w("weight"), nullptr, 0, op.channels > 1, stream));
          break;
        case op_kind::relu:
          SPINDLE_TRY(gpu::activation_async(y.p, n, gpu::activation::relu, 0, stream));
          break;
        case op_kind::elu:
          SPINDLE_TRY(gpu::activation_async(y.p, n, gpu::activation::elu, op.alpha, stream));
          break;
        case op_kind::leaky_relu:
          SPINDLE_TRY(gpu::activation_async(y.p, n, gpu::activation::leaky_relu,
                                            op.negative_slope, stream));
          break;
        case op_kind::gelu:
          SPINDLE_TRY(gpu::activation_async(
              y.p, n, op.approximate_tanh ? gpu::activation::gelu_tanh : gpu::activation::gelu, 0,
              stream));
          break;
        case op_kind::tanh:
          SPINDLE_TRY(gpu::activation_async(y.p, n, gpu::activation::tanh, 0, stream));
          break;
        case op_kind::sigmoid:
          SPINDLE_TRY(gpu::activation_async(y.p, n, gpu::activation::sigmoid, 0, stream));
          break;
        default:  // the pipeline runs such a model's pass on the host
          return make_error(errc::unsupported, "op {} ({}) has no device path", i,
                            config::to_string(op.kind));
      }
    }
    values[op.name] = y;
  }
  const dvalue out = values.at(d.ops.back().name);
  const std::int64_t rows = std::min(out.rows, blocks.back().num_dst);
  SPINDLE_ASSIGN_OR_RETURN(auto result, nn::tensor::empty(a, {rows, out.cols}));
  SPINDLE_TRY(gpu::copy_to_host_async(result.data(), out.p, std::size_t(rows * out.cols) * 4,
                                      stream));
  SPINDLE_TRY(gpu::synchronize(stream));
  if (host_log) nn::log_softmax_rows_(result);
  if (host_softmax) nn::softmax_rows_(result);
  if (d.log_softmax) nn::log_softmax_rows_(result);
  return result;
}

}  // namespace spindle::serving
