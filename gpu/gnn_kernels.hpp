// CUDA launchers of the GNN serving kernels: the sampling step of one hop (one
// thread block per frontier row, gpu/kernels/sample_draw.hpp's draw), the CSR
// SpMM of a block's aggregation (gpu/kernels/spmm_row.hpp, a thread per
// column), and an element-wise activation (gpu/kernels/activation.hpp), plus
// the device memory they read. Asynchronous on `stream` (nullptr: the default
// stream). Built only with the CUDA backend; without it every call answers
// errc::unsupported, and nothing here has run on a GPU yet (README, Devices).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "gpu/kernels/activation.hpp"
#include "gpu/kernels/attention_row.hpp"
#include "gpu/kernels/gat_row.hpp"
#include "gpu/kernels/gather_row.hpp"
#include "gpu/kernels/norm_row.hpp"
#include "gpu/kernels/spmm_row.hpp"

namespace spindle::gpu {

/// A graph's CSR in device memory (or UVA-mapped host memory).
struct csr_device_view {
  const std::int64_t* indptr = nullptr;   // num_nodes + 1
  const std::int32_t* indices = nullptr;  // neighbour ids (graphs below 2^31 nodes)
  std::int64_t num_nodes = 0;
};

/// One hop: for frontier row i (node frontier[i]) writes the global ids of its
/// sampled neighbours to out[i * fanout ...] and how many to counts[i]
/// (fanout in 1..kMaxFloydFanout; the host's draw for the same seed, hop, node).
status sample_hop_async(csr_device_view g, const std::int64_t* frontier, std::int64_t rows,
                        int fanout, std::uint64_t seed, int hop, std::int64_t* out,
                        std::int64_t* counts, void* stream);

/// out [rows x width] = the aggregation of x [num_src x width] over a block's CSR.
status spmm_async(const std::int64_t* indptr, const std::int32_t* indices, const float* x,
                  std::int64_t rows, std::int64_t width, spmm_reduce op, float* out, void* stream);

/// data[0, n) = activate(a, data[i], param), in place.
status activation_async(float* data, std::int64_t n, activation a, float param, void* stream);

/// out[i * dim ...] = the feature row of ids[i], from the tier the lookup names.
status gather_async(tier_lookup lookup, const float* device_rows, const float* host_rows,
                    std::int64_t dim, const std::int64_t* ids, std::int64_t n, float* out,
                    void* stream);

/// dst row rows_to[i] = src row i (dim floats), i < n (gather_row.hpp's placed_at).
status place_rows_async(const float* src, const std::int64_t* rows_to, std::int64_t n,
                        std::int64_t dim, float* dst, void* stream);

/// A cuBLAS handle (the device GNN layers' GEMMs); freed by blas_destroy. A
/// handle's GEMMs run on the stream last set (one handle per concurrent stream).
expected<void*> blas_create();
void blas_destroy(void* blas);
status blas_set_stream(void* blas, void* stream);

/// One GraphSAGE layer on the device (PyG SAGEConv, row-major, device memory):
/// y [num_dst x out] = act(mean_agg(x) W_l^T + b_l + x[:num_dst] W_r^T), with
/// `agg` [num_dst x in] as scratch. W_l, W_r are [out x in] as PyG stores them.
status sage_layer_async(void* blas, const std::int64_t* indptr, const std::int32_t* indices,
                        const float* x, std::int64_t num_dst, std::int64_t in, std::int64_t out,
                        const float* w_l, const float* b_l, const float* w_r, float* agg, float* y,
                        activation act, void* stream);

/// Row-major y [n x out] (+)= a [n x in] W^T (W [out x in], PyTorch's layout).
status gemm_wt_async(void* blas, const float* a, std::int64_t n, std::int64_t in, const float* w,
                     std::int64_t out, float beta, float* y);
/// y [rows x cols] = act(y + bias) (a linear layer's epilogue).
status bias_activation_async(float* y, std::int64_t rows, std::int64_t cols, const float* bias,
                             activation act, void* stream);
/// y [num_dst x width] = GCN's normalized aggregation of h (gcn_element).
status gcn_aggregate_async(const std::int64_t* indptr, const std::int32_t* indices, const float* h,
                           const float* degree, std::int64_t num_dst, std::int64_t width, float* y,
                           void* stream);
/// scores [rows x heads] = every node's GAT score per head (gat_node_score)
/// of h [rows x hc], hc = heads * c, against att [heads x c].
status gat_scores_async(const float* h, std::int64_t rows, std::int64_t hc, int heads,
                        const float* att, float* scores, void* stream);
/// y [num_dst x hc] = GAT's attention aggregation of h (gat_element), from the
/// node scores s_src [num_src x heads] and s_dst [num_dst x heads].
status gat_aggregate_async(const std::int64_t* indptr, const std::int32_t* indices, const float* h,
                           std::int64_t num_dst, std::int64_t hc, int heads, const float* s_src,
                           const float* s_dst, float negative_slope, float* y, void* stream);
/// logits [(E + num_dst) x heads]: every edge's attention logit (attention_logit)
/// in attention_row.hpp's slots, and with self_loops each row's self-loop's.
status attention_logits_async(const std::int64_t* indptr, const std::int32_t* indices,
                              std::int64_t num_dst, int heads, const attention_inputs& in,
                              bool self_loops, float* logits, void* stream);
/// y [num_dst x hc] = the softmax aggregation of v by those logits (attend_element).
status attend_async(const std::int64_t* indptr, const std::int32_t* indices, const float* logits,
                    const float* v, std::int64_t num_dst, std::int64_t hc, int heads,
                    bool self_loops, float* y, void* stream);
/// y [num_dst x c] = ResGatedGraphConv's gated sum (gated_element).
status gated_sum_async(const std::int64_t* indptr, const std::int32_t* indices, const float* k,
                       const float* q, const float* v, std::int64_t num_dst, std::int64_t c,
                       float* y, void* stream);
/// out [rows x n] = b x_r + (1 - b) out per row, b = beta_gate (TransformerConv's beta).
status beta_mix_async(float* out, const float* xr, const float* w, std::int64_t rows,
                      std::int64_t n, void* stream);
/// z [num_dst x width] = gin_combine(z, x, scale) in place (z holds Σ_j x_j).
status gin_combine_async(float* z, const float* x, std::int64_t num_dst, std::int64_t width,
                         float scale, void* stream);

// --- a stack model's ops (serving::device_model::forward_stack) -------------------

/// y [num_dst x width] = GCNConv's aggregation with its options (gcn_element_ex).
status gcn_aggregate_ex_async(const std::int64_t* indptr, const std::int32_t* indices,
                              const float* h, const float* neighbours, float fill,
                              std::int64_t num_dst, std::int64_t width, float* y, void* stream);
/// Row-wise node ops, in place on y [rows x cols] (norm_row.hpp, activation.hpp).
enum class row_op { batch_norm, layer_norm, l2_normalize, prelu };
/// batch_norm: p0 mean, p1 var, p2 weight, p3 bias (weight/bias null: not affine);
/// layer_norm: p2 weight, p3 bias (null: not affine); prelu: p2 the weights (one, or
/// one per column when `per_column`).
status row_op_async(row_op op, float* y, std::int64_t rows, std::int64_t cols, const float* p0,
                    const float* p1, const float* p2, const float* p3, float eps, bool per_column,
                    void* stream);
/// y[i] = y[i] + x[i] (add) or max(y[i], x[i]) (max), i < n.
status combine_async(float* y, const float* x, std::int64_t n, bool max, void* stream);
/// dst[r, offset + c] = src[r, c] for r < rows, c < src_cols (dst rows dst_cols wide).
status copy_cols_async(float* dst, std::int64_t dst_cols, std::int64_t offset, const float* src,
                       std::int64_t src_cols, std::int64_t rows, void* stream);
/// y [rows x c] = the mean over heads of h [rows x heads*c] (GATConv concat=False).
status mean_heads_async(const float* h, std::int64_t rows, int heads, std::int64_t c, float* y,
                        void* stream);

/// Pins and maps host memory into the address space of every GPU (UVA,
/// portable): the returned pointer is what the current GPU's kernels read the
/// host tier through. Mapping a range again (from another GPU) is counted;
/// the last unmap_host unpins it.
expected<const void*> map_host(const void* p, std::size_t bytes);
void unmap_host(const void* p);

/// The calling thread's current GPU (every call above works on it), and how
/// many GPUs the driver shows.
status set_device(int index);
expected<int> device_count();

/// Device memory: allocate, free, copy (host <-> device), wait for a stream.
expected<void*> device_alloc(std::size_t bytes);
void device_free(void* p);
status copy_to_device(void* dst, const void* src, std::size_t bytes);
status copy_to_host(void* dst, const void* src, std::size_t bytes);
/// The same, queued on `stream` (ordered with its kernels; wait with synchronize).
status copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream);
status copy_to_host_async(void* dst, const void* src, std::size_t bytes, void* stream);
status synchronize(void* stream);

}  // namespace spindle::gpu
