#include "serving/cuda_layers.hpp"

#include "gpu/gnn_kernels.hpp"
#include "serving/detail/arena_put.hpp"

namespace spindle::serving {
namespace {

using config::model_arch;

using detail::put;

struct layer_io {
  const std::int64_t* indptr;
  const std::int32_t* indices;
  const float* x;  // [num_src x in]
  std::int64_t num_src, num_dst, in, out;
};

}  // namespace

bool device_model::supports(const nn::model& m) {
  if (m.precision() != "fp32") return false;  // bf16: the host's matmuls (device layers are fp32)
  const auto a = m.desc().arch;
  if (a == model_arch::stack) {
    if (m.desc().typed()) return false;  // typed models run on the host
    const auto& ops = m.desc().ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto k = ops[i].kind;
      if (k == config::op_kind::gat && !ops[i].add_self_loops) return false;
      if (k == config::op_kind::mul || k == config::op_kind::scale || k == config::op_kind::mean ||
          config::reads_edge_attr(ops[i]))
        return false;  // no device kernel yet (edge attributes: gine, edge_dim): the host serves it
      if ((k == config::op_kind::log_softmax || k == config::op_kind::softmax) && i + 1 != ops.size())
        return false;
    }
    return true;
  }
  return a == model_arch::graphsage || a == model_arch::gcn || a == model_arch::gin ||
         a == model_arch::gat;
}

expected<std::unique_ptr<device_model>> device_model::create(const nn::model& m) {
  if (!supports(m))
    return make_error(errc::unsupported, "{}: no device layers for {}", m.desc().name,
                      config::to_string(m.desc().arch));
  std::unique_ptr<device_model> dm(new device_model);
  dm->model_ = &m;
  for (const auto& spec : nn::parameter_specs(m.desc())) {
    if (spec.optional && spec.name.ends_with(".eps")) continue;  // read on the host
    if (!spec.load || !m.has_param(spec.name)) continue;      // absent optional, unread buffer
    const auto& t = m.param(spec.name);
    SPINDLE_ASSIGN_OR_RETURN(void* p, gpu::device_alloc(std::size_t(t.numel()) * 4));
    dm->params_[spec.name] = p;
    SPINDLE_TRY(gpu::copy_to_device(p, t.data(), std::size_t(t.numel()) * 4));
  }
  return dm;
}

device_model::~device_model() {
  for (auto& [name, p] : params_) gpu::device_free(p);
}

const float* device_model::tensor(const std::string& name) const {
  auto it = params_.find(name);
  return it == params_.end() ? nullptr : static_cast<const float*>(it->second);
}

const float* device_model::param(int layer, const std::string& name) const {
  return static_cast<const float*>(params_.at(fmt::format("convs.{}.{}", layer, name)));
}

expected<nn::tensor> device_model::forward(gpu::device_arena& arena, void* blas, nn::allocator& a,
                                           std::span<const nn::block> blocks,
                                           std::span<const float> degree, const nn::tensor& x,
                                           const float* x_device) const {
  const auto& d = model_->desc();
  if (d.arch == model_arch::stack) return forward_stack(arena, blas, a, blocks, degree, x, x_device);
  void* const stream = arena.stream();  // every copy, kernel and GEMM of the pass
  SPINDLE_TRY(gpu::blas_set_stream(blas, stream));
  const void* h = x_device;
  if (!h) {
    SPINDLE_ASSIGN_OR_RETURN(h, put(arena, x.data(), std::size_t(x.numel()) * 4));
  }
  const float* deg = nullptr;
  if (d.arch == model_arch::gcn) {
    SPINDLE_ASSIGN_OR_RETURN(void* p, put(arena, degree.data(), degree.size_bytes()));
    deg = static_cast<const float*>(p);
  }
  std::int64_t width = x.cols(), num_src = x.rows();
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    const auto& b = blocks[l];
    const int li = int(l);
    const bool last = l + 1 == blocks.size();
    const std::int64_t out = last ? d.out : d.hidden;  // per head for GAT
    const int heads = d.arch == model_arch::gat && !last ? d.heads : 1;
    const auto act = last ? gpu::activation::none : gpu::activation::relu;
    SPINDLE_ASSIGN_OR_RETURN(void* ip, put(arena, b.indptr.data(), b.indptr.size_bytes()));
    SPINDLE_ASSIGN_OR_RETURN(void* ix, put(arena, b.indices.data(), b.indices.size_bytes()));
    const auto* indptr = static_cast<const std::int64_t*>(ip);
    const auto* indices = static_cast<const std::int32_t*>(ix);
    const auto* xin = static_cast<const float*>(h);
    SPINDLE_ASSIGN_OR_RETURN(auto* y, arena.take_n<float>(std::size_t(b.num_dst * heads * out)));
    if (d.arch == model_arch::gat) {  // GATConv: attention over lin_src(x), heads concatenated
      const std::int64_t hc = heads * out;
      SPINDLE_ASSIGN_OR_RETURN(auto* xw, arena.take_n<float>(std::size_t(num_src * hc)));
      SPINDLE_ASSIGN_OR_RETURN(auto* s_src, arena.take_n<float>(std::size_t(num_src * heads)));
      SPINDLE_ASSIGN_OR_RETURN(auto* s_dst, arena.take_n<float>(std::size_t(b.num_dst * heads)));
      SPINDLE_TRY(
          gpu::gemm_wt_async(blas, xin, num_src, width, param(li, "lin_src.weight"), hc, 0.0f, xw));
      SPINDLE_TRY(
          gpu::gat_scores_async(xw, num_src, hc, heads, param(li, "att_src"), s_src, stream));
      SPINDLE_TRY(
          gpu::gat_scores_async(xw, b.num_dst, hc, heads, param(li, "att_dst"), s_dst, stream));
      SPINDLE_TRY(gpu::gat_aggregate_async(indptr, indices, xw, b.num_dst, hc, heads, s_src, s_dst,
                                           0.2f, y, stream));
      SPINDLE_TRY(gpu::bias_activation_async(y, b.num_dst, hc, param(li, "bias"), act, stream));
    } else if (d.arch == model_arch::graphsage) {  // lin_l(mean_j x_j) + b + lin_r(x_i)
      SPINDLE_ASSIGN_OR_RETURN(auto* agg, arena.take_n<float>(std::size_t(b.num_dst * width)));
      SPINDLE_TRY(gpu::sage_layer_async(blas, indptr, indices, xin, b.num_dst, width, out,
                                        param(li, "lin_l.weight"), param(li, "lin_l.bias"),
                                        param(li, "lin_r.weight"), agg, y, act, stream));
    } else if (d.arch == model_arch::gcn) {  // propagate(norm, x W) + b
      SPINDLE_ASSIGN_OR_RETURN(auto* xw, arena.take_n<float>(std::size_t(num_src * out)));
      SPINDLE_TRY(
          gpu::gemm_wt_async(blas, xin, num_src, width, param(li, "lin.weight"), out, 0.0f, xw));
      SPINDLE_TRY(gpu::gcn_aggregate_async(indptr, indices, xw, deg, b.num_dst, out, y, stream));
      SPINDLE_TRY(gpu::bias_activation_async(y, b.num_dst, out, param(li, "bias"), act, stream));
    } else {  // GIN: nn((1 + eps) x_i + Σ_j x_j), nn = Linear, ReLU, Linear
      const auto eps = fmt::format("convs.{}.eps", li);  // optional (0 when absent)
      const float scale = 1.0f + (model_->has_param(eps) ? model_->param(eps).data()[0] : 0.0f);
      SPINDLE_ASSIGN_OR_RETURN(auto* z, arena.take_n<float>(std::size_t(b.num_dst * width)));
      SPINDLE_ASSIGN_OR_RETURN(auto* mid, arena.take_n<float>(std::size_t(b.num_dst * out)));
      SPINDLE_TRY(gpu::spmm_async(indptr, indices, xin, b.num_dst, width, gpu::spmm_reduce::sum, z,
                                  stream));
      SPINDLE_TRY(gpu::gin_combine_async(z, xin, b.num_dst, width, scale, stream));
      SPINDLE_TRY(
          gpu::gemm_wt_async(blas, z, b.num_dst, width, param(li, "nn.0.weight"), out, 0.0f, mid));
      SPINDLE_TRY(gpu::bias_activation_async(mid, b.num_dst, out, param(li, "nn.0.bias"),
                                             gpu::activation::relu, stream));
      SPINDLE_TRY(
          gpu::gemm_wt_async(blas, mid, b.num_dst, out, param(li, "nn.2.weight"), out, 0.0f, y));
      SPINDLE_TRY(
          gpu::bias_activation_async(y, b.num_dst, out, param(li, "nn.2.bias"), act, stream));
    }
    h = y;
    width = heads * out;
    num_src = b.num_dst;
  }
  const std::int64_t rows = blocks.back().num_dst;
  SPINDLE_ASSIGN_OR_RETURN(auto y, nn::tensor::empty(a, {rows, width}));
  // Queued behind the pass on its stream: one wait for the pass and the answers.
  SPINDLE_TRY(gpu::copy_to_host_async(y.data(), h, std::size_t(rows * width) * 4, stream));
  SPINDLE_TRY(gpu::synchronize(stream));
  if (d.log_softmax) nn::log_softmax_rows_(y);
  return y;
}

std::size_t device_model::arena_bytes(const config::model_desc& d,
                                      std::span<const nn::block> blocks, std::int64_t x_rows,
                                      std::size_t degree_bytes) {
  if (d.arch == model_arch::stack) return stack_arena_bytes(d, blocks, x_rows, degree_bytes);
  auto aligned = [](std::size_t b) { return (b + 255) / 256 * 256; };
  auto floats = [&](std::int64_t n) { return aligned(std::size_t(n) * 4); };
  std::size_t total = floats(x_rows * d.in);
  if (d.arch == model_arch::gcn) total += aligned(degree_bytes);
  std::int64_t width = d.in, num_src = x_rows;
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    const auto& b = blocks[l];
    const bool last = l + 1 == blocks.size();
    const std::int64_t out = last ? d.out : d.hidden;
    const int heads = d.arch == model_arch::gat && !last ? d.heads : 1;
    total += aligned(b.indptr.size_bytes()) + aligned(b.indices.size_bytes());
    total += floats(b.num_dst * heads * out);
    if (d.arch == model_arch::gat)
      total += floats(num_src * heads * out) + floats(num_src * heads) + floats(b.num_dst * heads);
    else if (d.arch == model_arch::graphsage)
      total += floats(b.num_dst * width);
    else if (d.arch == model_arch::gcn)
      total += floats(num_src * out);
    else
      total += floats(b.num_dst * width) + floats(b.num_dst * out);
    width = heads * out;
    num_src = b.num_dst;
  }
  return total;
}

}  // namespace spindle::serving
