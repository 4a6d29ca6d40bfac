#include "nn/ops.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gpu/kernels/activation.hpp"
#include "gpu/kernels/gat_row.hpp"
#include "gpu/kernels/spmm_row.hpp"
#include "nn/bag_offsets.hpp"
#include "nn/f32_matmul.hpp"
#include "nn/row_kernel.hpp"

extern "C" void openblas_set_num_threads(int);

namespace spindle::nn {

void set_blas_threads(int threads) { openblas_set_num_threads(std::max(1, threads)); }

void for_row_chunks(thread_pool* pool, std::int64_t rows, std::int64_t min_rows,
                    const std::function<void(std::int64_t, std::int64_t)>& fn) {
  const auto slots = pool ? std::int64_t(pool->slots()) : 1;
  if (slots < 2 || rows < 2 * min_rows) {
    if (rows > 0) fn(0, rows);
    return;
  }
  const std::int64_t grain = std::max(min_rows, (rows + slots - 1) / slots);
  pool->parallel_for(0, rows, grain,
                     [&](std::int64_t lo, std::int64_t hi, std::size_t) { fn(lo, hi); });
}

namespace {
// GEMMs below this many rows per thread are not worth a hand-off to the pool.
constexpr std::int64_t kGemmGrain = 48;

// Up to this many rows, one GEMV per row: OpenBLAS's sgemm packs the whole
// weight matrix for every call, which at a handful of rows costs more than the
// product (DLRM's MLPs at 1 row: 572 us as sgemm, 97 us as sgemv on this
// build's machine; the two meet near 7 rows).
constexpr std::int64_t kGemvRows = 4;

// y[rows] = beta * y + x W^T on rows [lo, hi), on this thread: oneDNN's FP32
// matmul where it runs AVX-512 (nn/f32_matmul), else single-threaded OpenBLAS.
// `beta` is 0 or 1 (linear, linear_accumulate); the route follows the whole product's rows.
void gemm_rows(const tensor& x, std::span<const float> w, float beta, tensor& y, std::int64_t lo,
               std::int64_t hi) {
  const auto in = int(x.cols()), out = int(y.cols());
  if (hi - lo > kGemvRows &&
      f32_matmul(x.row(lo), w.data(), y.row(lo), hi - lo, in, out, beta != 0.0f, y.rows()))
    return;
  if (hi - lo <= kGemvRows) {
    for (std::int64_t r = lo; r < hi; ++r)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, w.data(), in, x.row(r), 1, beta,
                  y.row(r), 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(hi - lo), out, in, 1.0f, x.row(lo), in,
              w.data(), in, beta, y.row(lo), out);
}

// o[0, f) += row[0, f) (bias rows, bags).
SPINDLE_ROW_KERNEL void add_row(float* __restrict__ o, const float* __restrict__ row,
                                std::int64_t f) {
  for (std::int64_t c = 0; c < f; ++c) o[c] += row[c];
}

// o[0, f) = relu(o + row) (a bias row, then ReLU, in one pass).
SPINDLE_ROW_KERNEL void add_row_relu(float* __restrict__ o, const float* __restrict__ row,
                                     std::int64_t f) {
  for (std::int64_t c = 0; c < f; ++c) o[c] = gpu::relu(o[c] + row[c]);
}

// o[0, f) = relu(o) (a row without a bias, or a whole tensor's values).
SPINDLE_ROW_KERNEL void relu_row(float* __restrict__ o, std::int64_t f) {
  for (std::int64_t c = 0; c < f; ++c) o[c] = gpu::relu(o[c]);
}

}  // namespace

void add_bias(tensor& y, std::span<const float> bias, std::int64_t lo, std::int64_t hi,
              epilogue e) {
  const bool relu = e == epilogue::relu;
  if (bias.empty()) {
    if (relu)
      for (std::int64_t r = lo; r < hi; ++r) relu_row(y.row(r), y.cols());
    return;
  }
  for (std::int64_t r = lo; r < hi; ++r)
    relu ? add_row_relu(y.row(r), bias.data(), y.cols()) : add_row(y.row(r), bias.data(), y.cols());
}

expected<tensor> linear(allocator& a, const tensor& x, std::span<const float> weight,
                        std::span<const float> bias, std::int64_t out_features, thread_pool* pool,
                        epilogue e) {
  const std::int64_t n = x.rows(), in = x.cols();
  if (std::int64_t(weight.size()) != out_features * in)
    return make_error(errc::invalid_argument, "linear: weight has {} values, expected {} x {}",
                      weight.size(), out_features, in);
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {n, out_features}));
  for_row_chunks(pool, n, kGemmGrain, [&](std::int64_t lo, std::int64_t hi) {
    gemm_rows(x, weight, 0.0f, y, lo, hi);
    add_bias(y, bias, lo, hi, e);
  });
  return y;
}

expected<tensor> linear_packed(allocator& a, const tensor& x, const packed_weight& packed,
                               std::span<const float> weight, std::span<const float> bias,
                               std::int64_t out_features, thread_pool* pool, epilogue e) {
  const std::int64_t n = x.rows(), in = x.cols();
  if (packed.in() != in || packed.out() != out_features ||
      std::int64_t(weight.size()) != out_features * in)
    return make_error(errc::invalid_argument,
                      "linear_packed: x [{} x {}], weight {} values, packed [{} x {}], out {}", n,
                      in, weight.size(), packed.out(), packed.in(), out_features);
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {n, out_features}));
  // Block by block, each block's bias (and ReLU) while its rows are still in
  // cache: one pass over the output instead of a product, a bias pass and a ReLU
  // pass over the whole of it. The same products as one call for every block
  // (packed_weight runs a block at a time), so the same bits.
  for_row_chunks(pool, n, kGemmGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t b = lo; b < hi; b += packed_weight::kBlockRows) {
      const std::int64_t end = std::min(hi, b + packed_weight::kBlockRows);
      const std::int64_t done = packed.multiply_blocks(x.row(b), y.row(b), end - b);
      if (b + done < end) gemm_rows(x, weight, 0.0f, y, b + done, end);
      add_bias(y, bias, b, end, e);
    }
  });
  return y;
}

status linear_accumulate(tensor& y, const tensor& x, std::span<const float> weight,
                         thread_pool* pool) {
  if (x.rows() != y.rows() || std::int64_t(weight.size()) != y.cols() * x.cols())
    return make_error(errc::invalid_argument,
                      "linear_accumulate: x [{} x {}], weight {} values, y [{} x {}]", x.rows(),
                      x.cols(), weight.size(), y.rows(), y.cols());
  for_row_chunks(pool, y.rows(), kGemmGrain,
                 [&](std::int64_t lo, std::int64_t hi) { gemm_rows(x, weight, 1.0f, y, lo, hi); });
  return status::ok();
}

SPINDLE_ROW_KERNEL void add_(tensor& y, const tensor& x) {
  float* __restrict__ o = y.data();
  const float* __restrict__ in = x.data();
  for (std::int64_t i = 0, n = y.numel(); i < n; ++i) o[i] += in[i];
}

void relu_(tensor& t) { relu_row(t.data(), t.numel()); }

void elu_(tensor& t, float alpha) {
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i) t.data()[i] = gpu::elu(t.data()[i], alpha);
}

void leaky_relu_(tensor& t, float slope) {
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
    t.data()[i] = gpu::leaky_relu(t.data()[i], slope);
}

namespace {
template <bool Log>
void softmax_impl(tensor& t) {
  const std::int64_t cols = t.cols();
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    float* row = t.row(r);
    float mx = *std::max_element(row, row + cols);
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(double(row[c] - mx));
    for (std::int64_t c = 0; c < cols; ++c)
      row[c] =
          Log ? float(row[c] - mx - std::log(sum)) : float(std::exp(double(row[c] - mx)) / sum);
  }
}
}  // namespace

void softmax_rows_(tensor& t) { softmax_impl<false>(t); }
void log_softmax_rows_(tensor& t) { softmax_impl<true>(t); }

namespace {
// Rows of a block's sources are random in memory: load a few edges ahead.
constexpr std::int64_t kEdgesAhead = 6;
// Aggregation below this many dst rows per thread stays on one thread.
constexpr std::int64_t kAggregateGrain = 64;

void prefetch_row(const float* row, std::int64_t f) {
  for (std::int64_t c = 0; c < f; c += 16) __builtin_prefetch(row + c);
}

// o += w * row over f columns.
SPINDLE_ROW_KERNEL void axpy_row(float* __restrict__ o, const float* __restrict__ row, float w,
                                 std::int64_t f) {
  for (std::int64_t c = 0; c < f; ++c) o[c] += w * row[c];
}

SPINDLE_ROW_KERNEL void max_row(float* __restrict__ o, const float* __restrict__ row,
                                std::int64_t f) {
  for (std::int64_t c = 0; c < f; ++c) o[c] = o[c] > row[c] ? o[c] : row[c];
}

SPINDLE_ROW_KERNEL void min_row(float* __restrict__ o, const float* __restrict__ row,
                                std::int64_t f) {
  for (std::int64_t c = 0; c < f; ++c) o[c] = o[c] < row[c] ? o[c] : row[c];
}

// o = the rows x_src[indices[lo, hi)] (lo < hi) reduced by op. The first row is
// copied in, not reduced into a zeroed (or +-inf) o: one pass over o fewer, and
// the same values (0 + a and max(-inf, a) are a), but for a first row of -0.0,
// which stays -0.0 where 0 + -0.0 gave +0.0.
void reduce_row(const block& b, const tensor& x, std::int64_t lo, std::int64_t hi, reduce_op op,
                float* o) {
  const std::int64_t f = x.cols(), end = b.indptr[b.num_dst];
  std::copy_n(x.row(b.indices[lo]), f, o);
  for (std::int64_t e = lo + 1; e < hi; ++e) {
    if (e + kEdgesAhead < end) prefetch_row(x.row(b.indices[e + kEdgesAhead]), f);
    const float* m = x.row(b.indices[e]);
    if (op == reduce_op::max)
      max_row(o, m, f);
    else if (op == reduce_op::min)
      min_row(o, m, f);
    else
      add_row(o, m, f);
  }
  if (op == reduce_op::mean) {
    const float inv = 1.0f / float(hi - lo);
    for (std::int64_t c = 0; c < f; ++c) o[c] *= inv;
  }
}
}  // namespace

// A dst row without sources is 0 (PyG's scatter with its default fill).
expected<tensor> propagate(allocator& a, const block& b, const tensor& x_src, reduce_op op,
                           thread_pool* pool) {
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {b.num_dst, x_src.cols()}));
  for_row_chunks(pool, b.num_dst, kAggregateGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      if (b.indptr[i + 1] > b.indptr[i])
        reduce_row(b, x_src, b.indptr[i], b.indptr[i + 1], op, out.row(i));
      else
        std::fill_n(out.row(i), x_src.cols(), 0.0f);
    }
  });
  return out;
}

expected<tensor> propagate_gcn(allocator& a, const block& b, const tensor& h,
                               std::span<const float> degree, thread_pool* pool) {
  const std::int64_t f = h.cols(), end = b.indptr[b.num_dst];
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {b.num_dst, f}));
  for_row_chunks(pool, b.num_dst, kAggregateGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      float* o = out.row(i);
      const float di = 1.0f / std::sqrt(degree[i]), self = 1.0f / degree[i];
      const float* hi_row = h.row(i);
      for (std::int64_t c = 0; c < f; ++c) o[c] = self * hi_row[c];
      for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
        if (e + kEdgesAhead < end) prefetch_row(h.row(b.indices[e + kEdgesAhead]), f);
        const std::int32_t j = b.indices[e];
        // PyG add_remaining_self_loops: an existing i->i edge is the self-loop term.
        if (j == i) continue;
        axpy_row(o, h.row(j), di / std::sqrt(degree[j]), f);
      }
    }
  });
  return out;
}

expected<tensor> propagate_gcn(allocator& a, const block& b, const tensor& h,
                               std::span<const float> neighbours, const gcn_options& o,
                               thread_pool* pool) {
  const std::int64_t f = h.cols();
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::zeros(a, {b.num_dst, f}));
  if (!o.normalize) {  // PyG: no gcn_norm, so no self-loops either: a sum over the edges
    for_row_chunks(pool, b.num_dst, kAggregateGrain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i)
        for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e)
          add_row(out.row(i), h.row(b.indices[e]), f);
    });
    return out;
  }
  const float fill = o.add_self_loops ? (o.improved ? 2.0f : 1.0f) : 0.0f;
  // The device's per-element formula (gpu::gcn_element_ex), by rows.
  auto inv_sqrt = [&](std::int64_t v) { return gpu::gcn_inv_sqrt(neighbours.data(), v, fill); };
  for_row_chunks(pool, b.num_dst, kAggregateGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      float* row = out.row(i);
      const float di = inv_sqrt(i);
      if (fill > 0) axpy_row(row, h.row(i), fill * di * di, f);
      for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
        const std::int32_t j = b.indices[e];
        // add_remaining_self_loops: an existing i->i edge is the self-loop term.
        if (j == i && fill > 0) continue;
        axpy_row(row, h.row(j), di * inv_sqrt(j), f);
      }
    }
  });
  return out;
}

expected<tensor> propagate_gat(allocator& a, const block& b, const tensor& h, int heads,
                               std::span<const float> att_src, std::span<const float> att_dst,
                               float negative_slope, bool add_self_loops, const tensor* h_dst,
                               std::span<const float> edge_score) {
  const std::int64_t hc = h.cols(), c = hc / heads, e0 = b.indptr[0];
  const std::int64_t edges = b.num_edges() + b.num_dst;  // at most one self-loop per dst
  // The per-node, per-edge and softmax pieces are the GAT kernel's (gpu/kernels/gat_row.hpp).
  auto node_score = [&](std::int64_t j, std::span<const float> att, int k) {
    return gpu::gat_node_score(h.data(), hc, c, att.data(), j, k);
  };
  SPINDLE_ASSIGN_OR_RETURN(auto alpha, tensor::empty(a, {edges, heads}));
  SPINDLE_ASSIGN_OR_RETURN(auto messages, tensor::empty(a, {edges, hc}));
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::zeros(a, {b.num_dst, hc}));
  std::int64_t slot = 0;
  std::vector<std::int64_t> scratch, edge_of;  // edge_of: each source's block edge (-1: the self-loop)
  auto edge_part = [&](std::int64_t t, int k) {  // edge_dim's score, 0 without
    if (edge_score.empty()) return 0.0f;
    if (edge_of[std::size_t(t)] >= 0) return edge_score[std::size_t(edge_of[std::size_t(t)] * heads + k)];
    const std::int64_t others = std::int64_t(edge_of.size()) - 1;
    float mean = 0;  // the self-loop: fill_value="mean" of the target's other edges
    for (std::int64_t u = 0; u < others; ++u)
      mean += edge_score[std::size_t(edge_of[std::size_t(u)] * heads + k)] / float(others);
    return mean;
  };
  for (std::int64_t i = 0; i < b.num_dst; ++i) {
    const std::int64_t first = slot;
    // Edge list of dst i: its sampled neighbours except itself, then itself (PyG
    // GATConv removes self-loops and adds one per node).
    std::vector<std::int64_t>& nbrs = scratch;
    nbrs.clear();
    edge_of.clear();
    // Without self-loops the edges are taken as given (an existing i->i edge stays).
    for (std::int64_t e = b.indptr[i] - e0; e < b.indptr[i + 1] - e0; ++e)
      if (b.indices[e0 + e] != i || !add_self_loops) {
        nbrs.push_back(b.indices[e0 + e]);
        edge_of.push_back(e0 + e);
      }
    if (add_self_loops) {
      nbrs.push_back(i);
      edge_of.push_back(-1);
    }
    if (nbrs.empty()) continue;  // no edge: PyG's softmax aggregation gives 0
    auto src_of = [&](std::int64_t k) { return nbrs[std::size_t(k)]; };
    const std::int64_t deg = std::int64_t(nbrs.size());
    for (int k = 0; k < heads; ++k) {
      const float ad = h_dst ? gpu::gat_node_score(h_dst->data(), hc, c, att_dst.data(), i, k)
                             : node_score(i, att_dst, k);
      float mx = -std::numeric_limits<float>::infinity();
      for (std::int64_t t = 0; t < deg; ++t) {
        const float s = gpu::gat_edge_score(node_score(src_of(t), att_src, k) + edge_part(t, k),
                                            ad, negative_slope);
        alpha.row(first + t)[k] = s;
        mx = std::max(mx, s);
      }
      double sum = 0;
      for (std::int64_t t = 0; t < deg; ++t) sum += std::exp(double(alpha.row(first + t)[k] - mx));
      for (std::int64_t t = 0; t < deg; ++t)
        alpha.row(first + t)[k] = gpu::gat_weight(alpha.row(first + t)[k], mx, sum);
    }
    for (std::int64_t t = 0; t < deg; ++t, ++slot) {
      const float* x = h.row(src_of(t));
      float* m = messages.row(slot);
      for (int k = 0; k < heads; ++k)
        for (std::int64_t q = 0; q < c; ++q) m[k * c + q] = alpha.row(slot)[k] * x[k * c + q];
      float* o = out.row(i);
      for (std::int64_t q = 0; q < hc; ++q) o[q] += m[q];
    }
  }
  return out;
}

expected<tensor> embedding_bag(allocator& a, std::span<const float> table, std::int64_t dim,
                               std::span<const std::int64_t> indices,
                               std::span<const std::int64_t> offsets, reduce_op op) {
  const std::int64_t rows = std::int64_t(table.size()) / dim;
  SPINDLE_TRY(check_bag_offsets(offsets, indices.size()));
  const std::int64_t bags = std::int64_t(offsets.size()) - 1;
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {bags, dim}));
  for (std::int64_t b = 0; b < bags; ++b) {
    float* o = out.row(b);
    // A bag's first row is copied, not added to zeros (most bags hold one key).
    if (offsets[b] == offsets[b + 1]) std::fill_n(o, dim, 0.0f);
    for (std::int64_t k = offsets[b]; k < offsets[b + 1]; ++k) {
      if (indices[k] < 0 || indices[k] >= rows)
        return make_error(errc::invalid_argument,
                          "embedding_bag: index {} at position {} outside [0, {})", indices[k], k,
                          rows);
      // Lookups are independent random rows: prefetch a few ahead (memory latency bound).
      if (k + 8 < std::int64_t(indices.size()) && indices[k + 8] >= 0 && indices[k + 8] < rows)
        for (std::int64_t c = 0; c < dim; c += 16)
          __builtin_prefetch(table.data() + indices[k + 8] * dim + c);
      if (k == offsets[b])
        std::memcpy(o, table.data() + indices[k] * dim, std::size_t(dim) * sizeof(float));
      else
        add_row(o, table.data() + indices[k] * dim, dim);
    }
    if (op == reduce_op::mean && offsets[b + 1] > offsets[b])
      for (std::int64_t c = 0; c < dim; ++c) o[c] /= float(offsets[b + 1] - offsets[b]);
  }
  return out;
}

expected<tensor> concat_cols(allocator& a, const std::vector<const tensor*>& parts) {
  std::int64_t rows = parts.empty() ? 0 : parts[0]->rows(), cols = 0;
  for (const tensor* p : parts) {
    if (p->rows() != rows)
      return make_error(errc::invalid_argument, "concat: {} rows vs {}", p->rows(), rows);
    cols += p->cols();
  }
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {rows, cols}));
  for (std::int64_t r = 0; r < rows; ++r) {
    float* o = out.row(r);
    for (const tensor* p : parts) {
      std::memcpy(o, p->row(r), std::size_t(p->cols()) * sizeof(float));
      o += p->cols();
    }
  }
  return out;
}

}  // namespace spindle::nn
