// Stack models (config/model_ops.hpp): the tensors each op reads, with PyG's
// names under the op's prefix, and the forward pass that runs the ops in order
// over the batch's sampled blocks. Message-passing ops consume one block each;
// a value keeps the rows of the block that produced it (the dst nodes of a block
// are the first src nodes, so a join of values of different depths takes the
// first rows of each, as PyG's full-graph answer restricted to those nodes).
#include <cstring>
#include <map>

#include "nn/model.hpp"

namespace spindle::nn {
namespace {

using config::gnn_op;
using config::op_kind;

std::string at(const gnn_op& op, std::string_view rest) { return op.prefix + "." + std::string(rest); }

// The width of each op's (first) input, from the widths validate_ops filled in.
std::vector<std::int64_t> input_widths(const config::model_desc& d) {
  std::map<std::string, std::int64_t> w{{"x", d.in}};
  std::vector<std::int64_t> in;
  for (const auto& op : d.ops) {
    in.push_back(w.at(op.inputs.at(0)));
    w[op.name] = op.width;
  }
  return in;
}

void op_specs(const gnn_op& op, std::int64_t in, std::size_t i, std::vector<param_spec>& s) {
  const std::int64_t out = op.out;
  auto add = [&](std::string_view rest, std::vector<std::int64_t> shape, std::string_view what,
                 bool optional = false, bool load = true) {
    s.push_back({at(op, rest), std::move(shape), optional,
                 fmt::format("op {} {}: {}", i, config::to_string(op.kind), what), load});
  };
  switch (op.kind) {
    case op_kind::sage:
      if (op.project) {
        add("lin.weight", {in, in}, "projection of the neighbours (project=True)");
        add("lin.bias", {in}, "projection bias");
      }
      add("lin_l.weight", {out, in}, fmt::format("{}-aggregated neighbours", op.aggr));
      if (op.bias) add("lin_l.bias", {out}, "bias");
      if (op.root_weight) add("lin_r.weight", {out, in}, "root (the node itself)");
      break;
    case op_kind::gcn:
      add("lin.weight", {out, in}, "projection");
      if (op.bias) add("bias", {out}, "bias");
      break;
    case op_kind::gat:
      add("lin_src.weight", {std::int64_t(op.heads) * out, in}, "shared projection");
      add("att_src", {1, op.heads, out}, "source attention");
      add("att_dst", {1, op.heads, out}, "target attention");
      if (op.bias) add("bias", {op.concat ? std::int64_t(op.heads) * out : out}, "bias");
      break;
    case op_kind::gin:
      add("eps", {1}, "eps (model.toml's when absent)", true);
      break;
    case op_kind::linear:
      add("weight", {out, in}, "weight");
      if (op.bias) add("bias", {out}, "bias");
      break;
    case op_kind::batch_norm:
      if (op.affine) {
        add("weight", {in}, "scale");
        add("bias", {in}, "shift");
      }
      add("running_mean", {in}, "running mean (eval)");
      add("running_var", {in}, "running variance (eval)");
      add("num_batches_tracked", {}, "training counter, unused at inference", true, false);
      break;
    case op_kind::layer_norm:
      if (op.affine) {
        add("weight", {in}, "scale");
        add("bias", {in}, "shift");
      }
      break;
    case op_kind::prelu:
      add("weight", {op.channels}, "negative slope");
      break;
    default:
      break;
  }
}

// A copy of t's first `rows` rows.
expected<tensor> copy_head(allocator& a, const tensor& t, std::int64_t rows) {
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {rows, t.cols()}));
  std::memcpy(y.data(), t.data(), std::size_t(rows * t.cols()) * sizeof(float));
  return y;
}

void add_bias_rows(tensor& y, std::span<const float> bias) {
  if (bias.empty()) return;
  for (std::int64_t r = 0; r < y.rows(); ++r)
    for (std::int64_t c = 0; c < y.cols(); ++c) y.row(r)[c] += bias[std::size_t(c)];
}

// GATConv(concat=False): the mean over heads of [rows x heads*c].
expected<tensor> mean_heads(allocator& a, const tensor& y, int heads) {
  const std::int64_t c = y.cols() / heads;
  SPINDLE_ASSIGN_OR_RETURN(auto m, tensor::zeros(a, {y.rows(), c}));
  for (std::int64_t r = 0; r < y.rows(); ++r)
    for (int k = 0; k < heads; ++k)
      for (std::int64_t q = 0; q < c; ++q) m.row(r)[q] += y.row(r)[k * c + q] / float(heads);
  return m;
}

reduce_op reduce_of(const std::string& aggr) {
  if (aggr == "sum") return reduce_op::sum;
  if (aggr == "max") return reduce_op::max;
  if (aggr == "min") return reduce_op::min;
  return reduce_op::mean;
}

}  // namespace

std::vector<param_spec> stack_parameter_specs(const config::model_desc& d) {
  std::vector<param_spec> s;
  const auto in = input_widths(d);
  for (std::size_t i = 0; i < d.ops.size(); ++i) op_specs(d.ops[i], in[i], i, s);
  return s;
}

// Op i on its inputs; `owned[k]` says whether in[k] may be overwritten (its last use).
expected<tensor> model::stack_op(allocator& a, std::size_t i, const block* b,
                                 std::span<const float> degree, std::vector<tensor*>& in,
                                 std::vector<bool>& owned, thread_pool* pool) const {
  const auto& op = desc_.ops[i];
  const tensor& x = *in[0];
  auto w = [&](std::string_view rest) { return p(at(op, rest)); };
  // The input itself when this op is its last use, else a copy: for in-place ops.
  auto mine = [&]() -> expected<tensor> {
    if (owned[0]) return std::move(*in[0]);
    return copy_head(a, x, x.rows());
  };
  switch (op.kind) {
    case op_kind::sage: {
      const tensor* src = &x;
      tensor projected;
      if (op.project) {
        SPINDLE_ASSIGN_OR_RETURN(projected, linear(a, x, w("lin.weight"), w("lin.bias"), x.cols(), pool));
        relu_(projected);
        src = &projected;
      }
      SPINDLE_ASSIGN_OR_RETURN(auto agg, propagate(a, *b, *src, reduce_of(op.aggr), pool));
      projected = tensor();
      SPINDLE_ASSIGN_OR_RETURN(auto y, linear(a, agg, w("lin_l.weight"), w("lin_l.bias"), op.out, pool));
      if (op.root_weight) SPINDLE_TRY(linear_accumulate(y, x.head(b->num_dst), w("lin_r.weight"), pool));
      if (op.normalize) l2_normalize_rows_(y);
      return y;
    }
    case op_kind::gcn: {
      SPINDLE_ASSIGN_OR_RETURN(auto h, linear(a, x, w("lin.weight"), {}, op.out, pool));
      gcn_options o{op.add_self_loops, op.improved, op.normalize};
      SPINDLE_ASSIGN_OR_RETURN(auto y, propagate_gcn(a, *b, h, degree, o, pool));
      add_bias_rows(y, w("bias"));
      return y;
    }
    case op_kind::gat: {
      SPINDLE_ASSIGN_OR_RETURN(auto h, linear(a, x, w("lin_src.weight"), {}, op.heads * op.out, pool));
      SPINDLE_ASSIGN_OR_RETURN(auto y, propagate_gat(a, *b, h, op.heads, w("att_src"), w("att_dst"),
                                                     op.negative_slope, op.add_self_loops));
      if (!op.concat && op.heads > 1) {
        SPINDLE_ASSIGN_OR_RETURN(y, mean_heads(a, y, op.heads));
      }
      add_bias_rows(y, w("bias"));
      return y;
    }
    case op_kind::gin: {  // (1 + eps) x_i + sum_j x_j; the op's nn follows as ops
      SPINDLE_ASSIGN_OR_RETURN(auto z, propagate(a, *b, x, reduce_op::sum, pool));
      const auto eps = w("eps");
      const float scale = 1.0f + (eps.empty() ? op.eps : eps[0]);
      for (std::int64_t r = 0; r < b->num_dst; ++r)
        for (std::int64_t c = 0; c < x.cols(); ++c) z.row(r)[c] += scale * x.row(r)[c];
      return z;
    }
    case op_kind::linear:
      return linear(a, x, w("weight"), w("bias"), op.out, pool);
    case op_kind::add:
    case op_kind::max: {
      std::int64_t rows = x.rows();
      for (auto* t : in) rows = std::min(rows, t->rows());
      SPINDLE_ASSIGN_OR_RETURN(auto y, copy_head(a, x, rows));
      for (std::size_t k = 1; k < in.size(); ++k) {
        const auto head = in[k]->head(rows);
        op.kind == op_kind::add ? add_(y, head) : max_(y, head);
      }
      return y;
    }
    case op_kind::cat: {
      std::int64_t rows = x.rows();
      for (auto* t : in) rows = std::min(rows, t->rows());
      std::vector<tensor> heads;
      std::vector<const tensor*> parts;
      for (auto* t : in) heads.push_back(t->head(rows));
      for (const auto& h : heads) parts.push_back(&h);
      return concat_cols(a, parts);
    }
    default:
      break;
  }
  // In-place node-wise ops.
  SPINDLE_ASSIGN_OR_RETURN(auto y, mine());
  switch (op.kind) {
    case op_kind::batch_norm:
      batch_norm_(y, w("running_mean"), w("running_var"), w("weight"), w("bias"), op.eps);
      break;
    case op_kind::layer_norm: layer_norm_(y, w("weight"), w("bias"), op.eps); break;
    case op_kind::relu: relu_(y); break;
    case op_kind::elu: elu_(y, op.alpha); break;
    case op_kind::leaky_relu: leaky_relu_(y, op.negative_slope); break;
    case op_kind::gelu: gelu_(y, op.approximate_tanh); break;
    case op_kind::tanh: tanh_(y); break;
    case op_kind::sigmoid: sigmoid_(y); break;
    case op_kind::prelu: prelu_(y, w("weight")); break;
    case op_kind::log_softmax: log_softmax_rows_(y); break;
    case op_kind::softmax: softmax_rows_(y); break;
    default:
      return make_error(errc::internal, "op {} ({}) has no forward", i, config::to_string(op.kind));
  }
  return y;
}

expected<tensor> model::forward_stack(allocator& a, std::span<const block> blocks,
                                      std::span<const float> degree, const tensor& x,
                                      thread_pool* pool, const op_observer* observe) const {
  const auto& ops = desc_.ops;
  std::map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (const auto& name : ops[i].inputs) last_use[name] = i;
  last_use[ops.back().name] = ops.size();
  std::map<std::string, tensor> values;
  values.emplace("x", x.head(x.rows()));  // borrowed: never overwritten
  std::size_t hop = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    std::vector<tensor*> in;
    std::vector<bool> owned;
    for (const auto& name : op.inputs) {
      in.push_back(&values.at(name));
      owned.push_back(name != "x" && last_use.at(name) == i && op.inputs.size() == 1);
    }
    const block* b = nullptr;
    if (config::is_message_passing(op.kind)) {
      b = &blocks[hop++];
      if (in[0]->rows() < b->num_src)
        return make_error(errc::internal, "{}: op {} reads {} rows, its block has {} sources",
                          desc_.name, i, in[0]->rows(), b->num_src);
    }
    auto y = stack_op(a, i, b, degree, in, owned, pool);
    if (!y) return std::move(y).error().with_context(fmt::format("{}: op {} ({}): ", desc_.name, i,
                                                                 config::to_string(op.kind)));
    if (observe) (*observe)(i, *y);
    for (const auto& name : op.inputs)
      if (name != "x" && last_use.at(name) == i) values.erase(name);
    values.insert_or_assign(op.name, std::move(*y));
  }
  tensor out = std::move(values.at(ops.back().name));
  const std::int64_t seeds = blocks.back().num_dst;
  if (out.rows() > seeds) return copy_head(a, out, seeds);
  return out;
}

}  // namespace spindle::nn
