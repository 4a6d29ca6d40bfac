// The operators GNN and DLRM inference need, over nn::tensor: dense layers
// (OpenBLAS sgemm), activations, row softmax, sparse aggregation over a sampled
// block (sum, mean, max, GCN-normalised, GAT attention with several heads),
// embedding bags, concatenation and DLRM's pairwise dot interaction. Outputs and
// temporaries come from the caller's allocator, so peak memory is measurable.
// Sum/mean/max and GCN aggregation are sparse-dense products over the block's
// CSR (no [E x F] message tensor); GAT keeps per-edge scores and messages.
// With a thread pool, an op splits its rows over the pool's threads (each runs
// single-threaded OpenBLAS on its rows); without one it runs on the caller.
// Pure functions; thread-safe for distinct outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "gpu/kernels/attention_row.hpp"
#include "nn/packed_weight.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

/// One layer's message-flow graph: dst nodes [0, num_dst) are the first src
/// nodes; row i of the CSR lists the src nodes whose messages i receives.
struct block {
  std::int64_t num_dst = 0, num_src = 0;
  std::span<const std::int64_t> indptr;  // num_dst + 1
  std::span<const std::int32_t> indices;
  /// A typed graph's edge type of each edge, parallel to `indices` (empty: untyped).
  std::span<const std::int16_t> edge_types;
  /// The attributes of each edge, row-major [edges x edge_attr_cols], row e for
  /// indices[e] (empty unless the model reads edge attributes: gine).
  std::span<const float> edge_attr;
  std::int64_t edge_attr_cols = 0;
  std::int64_t num_edges() const { return indptr.empty() ? 0 : indptr[num_dst] - indptr[0]; }
};

/// Sets OpenBLAS to `threads` threads (Spindle owns its threads; default 1).
void set_blas_threads(int threads);

/// What a linear layer does to its output after the bias, in the same pass.
enum class epilogue { none, relu };

/// y = x W^T + b (PyTorch Linear: W is [out, in]); `bias` may be empty; with
/// epilogue::relu, y = relu(x W^T + b), the ReLU applied as the bias is added.
expected<tensor> linear(allocator& a, const tensor& x, std::span<const float> weight,
                        std::span<const float> bias, std::int64_t out_features,
                        thread_pool* pool = nullptr, epilogue e = epilogue::none);
/// linear() with the rows `packed` takes (blocks of 64, a padded last block)
/// multiplied through it, the weight's copy in oneDNN's layout (nn/packed_weight);
/// the rest as linear() does.
expected<tensor> linear_packed(allocator& a, const tensor& x, const packed_weight& packed,
                               std::span<const float> weight, std::span<const float> bias,
                               std::int64_t out_features, thread_pool* pool = nullptr,
                               epilogue e = epilogue::none);
/// y's rows [lo, hi) += bias (none when it is empty; it has y.cols() values),
/// then ReLU with epilogue::relu.
void add_bias(tensor& y, std::span<const float> bias, std::int64_t lo, std::int64_t hi,
              epilogue e = epilogue::none);
/// y += x W^T (y is [x.rows() x out]); errors name the mismatched shape.
status linear_accumulate(tensor& y, const tensor& x, std::span<const float> weight,
                         thread_pool* pool = nullptr);
/// Calls fn(lo, hi) over [0, rows) split into one chunk per pool slot (at least
/// `min_rows` rows each); on the caller alone without a pool or for few rows.
void for_row_chunks(thread_pool* pool, std::int64_t rows, std::int64_t min_rows,
                    const std::function<void(std::int64_t, std::int64_t)>& fn);
/// y += x (same shape).
void add_(tensor& y, const tensor& x);
void relu_(tensor& t);
void elu_(tensor& t, float alpha = 1.0f);
void leaky_relu_(tensor& t, float slope = 0.01f);
/// Row-wise softmax / log-softmax in place.
void softmax_rows_(tensor& t);
void log_softmax_rows_(tensor& t);

enum class reduce_op { sum, mean, max, min };

/// Node-wise layers of a GNN stack (nn/ops_node.cpp; per-element logic in
/// gpu/kernels/activation.hpp and norm_row.hpp, shared with the device).
/// BatchNorm1d in eval mode; `weight`/`bias` empty when not affine.
void batch_norm_(tensor& t, std::span<const float> mean, std::span<const float> var,
                 std::span<const float> weight, std::span<const float> bias, float eps);
/// torch.nn.LayerNorm over each row; `weight`/`bias` empty when not affine.
void layer_norm_(tensor& t, std::span<const float> weight, std::span<const float> bias, float eps);
/// F.normalize(p=2, dim=-1) of each row.
void l2_normalize_rows_(tensor& t);
void gelu_(tensor& t, bool approximate_tanh);
void tanh_(tensor& t);
void sigmoid_(tensor& t);
/// PReLU: `weight` has one value (shared) or one per column.
void prelu_(tensor& t, std::span<const float> weight);
/// y = max(y, x) elementwise (same shape).
void max_(tensor& y, const tensor& x);
/// y = y * x elementwise (same shape).
void mul_(tensor& y, const tensor& x);
/// t = alpha * t.
void scale_(tensor& t, float alpha);

/// GCNConv's options beyond the default (self-loops of weight 1, symmetric norm).
struct gcn_options {
  bool add_self_loops = true;
  bool improved = false;   // self-loops of weight 2
  bool normalize = true;   // false: a plain sum over the edges (no self-loops added)
};

/// PyG-style Propagate as a sparse-dense product: out_i = reduce_{j in N(i)} x_src[j]
/// over the block's CSR, accumulated in edge order (empty rows give 0).
expected<tensor> propagate(allocator& a, const block& b, const tensor& x_src, reduce_op op,
                           thread_pool* pool = nullptr);

/// GCN (PyG GCNConv with self-loops): out_i = sum_{j != i} h_j / sqrt(d_j d_i) + h_i / d_i,
/// where d = 1 + in-degree without self edges (gcn_degrees). `degree` is per src node.
expected<tensor> propagate_gcn(allocator& a, const block& b, const tensor& h,
                               std::span<const float> degree, thread_pool* pool = nullptr);
/// GCNConv with `o`: `neighbours[v]` is v's in-neighbour count without self edges
/// (the graph's or the block's); deg = neighbours + self-loop weight (0 without
/// self-loops), 1/sqrt(0) taken as 0 as PyG does.
expected<tensor> propagate_gcn(allocator& a, const block& b, const tensor& h,
                               std::span<const float> neighbours, const gcn_options& o,
                               thread_pool* pool = nullptr);

/// GAT (PyG GATConv, self-loops added, concat heads): h is [num_src x heads*C];
/// att_src/att_dst are [heads x C]; LeakyReLU(0.2) scores, softmax over each dst's
/// incoming edges plus itself. Temporaries: scores [(E+num_dst) x heads] and
/// messages [(E+num_dst) x heads*C]. With `h_dst` (a bipartite edge type,
/// without self-loops) the targets' scores read its rows instead of h's. With
/// `edge_score` ([edges x heads], row e for the block's edge e: edge_dim's
/// att_edge . lin_edge(e_ji)) each edge's score adds its row, and a self-loop
/// adds the mean of its target's other edges' rows (PyG's fill_value="mean":
/// lin_edge is linear, so the mean of the scores is the score of the mean), 0
/// for a target without any.
expected<tensor> propagate_gat(allocator& a, const block& b, const tensor& h, int heads,
                               std::span<const float> att_src, std::span<const float> att_dst,
                               float negative_slope = 0.2f, bool add_self_loops = true,
                               const tensor* h_dst = nullptr,
                               std::span<const float> edge_score = {});

/// PyG's softmax aggregation over each dst's incoming edges (nn/ops_attention.cpp):
/// alpha_ij = softmax_j of gpu::attention_logit(in, i, j, k) per head k (GATv2's or
/// TransformerConv's), out_i = sum_j alpha_ij v_j (v is [num_src x heads*C], out
/// [num_dst x heads*C]). With `self_loops` the block's i->i edges are dropped and one
/// i->i added (add_self_loops), else edges are taken as given; a dst without edges
/// gets 0. The element logic is gpu/kernels/attention_row.hpp's.
expected<tensor> attend(allocator& a, const block& b, const tensor& v, int heads,
                        const gpu::attention_inputs& in, bool self_loops,
                        thread_pool* pool = nullptr);

/// An attention layer's edge attributes (edge_dim): `rows` [edges x heads*C],
/// row e the block's edge e's lin_edge(e_ji). They join each edge's logit
/// (gpu::attention_logit) and, with `in_values` (TransformerConv), its message
/// v_j + row. A self-loop's row is the mean of its target's other edges' rows,
/// 0 without any (PyG's fill_value="mean").
struct edge_terms {
  const tensor* rows = nullptr;
  bool in_values = false;
};
/// attend() with edge attributes.
expected<tensor> attend(allocator& a, const block& b, const tensor& v, int heads,
                        const gpu::attention_inputs& in, bool self_loops, const edge_terms& edges,
                        thread_pool* pool = nullptr);

/// PyG ResGatedGraphConv's aggregation: out_i = sum_j sigmoid(k_i + q_j) * v_j over
/// the block's edges as given (k is [num_dst x C], q and v [num_src x C]).
expected<tensor> gated_sum(allocator& a, const block& b, const tensor& k, const tensor& q,
                           const tensor& v, thread_pool* pool = nullptr);

/// Sum or mean of table rows per bag: bag i holds indices[offsets[i], offsets[i+1]).
/// Errors name the first index outside the table.
expected<tensor> embedding_bag(allocator& a, std::span<const float> table, std::int64_t dim,
                               std::span<const std::int64_t> indices,
                               std::span<const std::int64_t> offsets, reduce_op op);

/// Column concatenation of tensors with equal row counts.
expected<tensor> concat_cols(allocator& a, const std::vector<const tensor*>& parts);

/// DLRM interaction: T = [dense, e_1..e_k] per row; output = [dense, <T_i, T_j> for i > j]
/// (strict lower triangle, row-major order as in the DLRM reference).
expected<tensor> dot_interaction(allocator& a, const tensor& dense,
                                 const std::vector<const tensor*>& embeddings);

}  // namespace spindle::nn
