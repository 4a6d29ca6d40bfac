// CUDA kernels of the attention layers (GATv2Conv, TransformerConv,
// ResGatedGraphConv): thin wrappers over gpu/kernels/attention_row.hpp, which
// the host operators share and the host tests check. A block per dst row.
#include <cuda_runtime.h>

#include "gpu/gnn_kernels.hpp"

namespace spindle::gpu {
namespace {

status check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return status::ok();
  return make_error(errc::unavailable, "{}: {}", what, cudaGetErrorString(e));
}

cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }
unsigned rows_grid(std::int64_t rows) {
  return unsigned(rows < 65535 ? (rows > 0 ? rows : 1) : 65535);
}
unsigned cols_block(std::int64_t cols) {
  return unsigned(cols < 256 ? ((cols + 31) / 32) * 32 : 256);
}

// Slot t of row r (edge t, or the self-loop at t = deg) for every head.
__global__ void logits_kernel(const std::int64_t* indptr, const std::int32_t* indices,
                              std::int64_t rows, int heads, attention_inputs in, bool self_loops,
                              float* logits) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t lo = indptr[r], deg = indptr[r + 1] - lo;
    const std::int64_t first = attention_first_slot(indptr, r);
    const std::int64_t n = (deg + (self_loops ? 1 : 0)) * heads;
    for (std::int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      const std::int64_t slot = t / heads;
      const int k = int(t % heads);
      const std::int64_t j = slot < deg ? indices[lo + slot] : r;
      logits[(first + slot) * heads + k] = attention_logit(in, r, j, k);
    }
  }
}

__global__ void attend_kernel(const std::int64_t* indptr, const std::int32_t* indices,
                              const float* logits, const float* v, std::int64_t rows,
                              std::int64_t hc, int heads, bool self_loops, float* y) {
  const std::int64_t c = hc / heads;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t col = threadIdx.x; col < hc; col += blockDim.x)
      y[r * hc + col] = attend_element(indptr, indices, logits, v, hc, c, heads, r, col, self_loops);
}

__global__ void gated_kernel(const std::int64_t* indptr, const std::int32_t* indices,
                             const float* k, const float* q, const float* v, std::int64_t rows,
                             std::int64_t c, float* y) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t col = threadIdx.x; col < c; col += blockDim.x)
      y[r * c + col] = gated_element(indptr, indices, k, q, v, c, r, col);
}

// One block per row: thread 0 computes the gate, then the row is mixed.
__global__ void beta_kernel(float* out, const float* xr, const float* w, std::int64_t rows,
                            std::int64_t n) {
  __shared__ float gate;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if (threadIdx.x == 0) gate = beta_gate(out + r * n, xr + r * n, w, n);
    __syncthreads();
    for (std::int64_t q = threadIdx.x; q < n; q += blockDim.x)
      out[r * n + q] = gate * xr[r * n + q] + (1.0f - gate) * out[r * n + q];
    __syncthreads();
  }
}

}  // namespace

status attention_logits_async(const std::int64_t* indptr, const std::int32_t* indices,
                              std::int64_t num_dst, int heads, const attention_inputs& in,
                              bool self_loops, float* logits, void* stream) {
  if (num_dst == 0) return status::ok();
  logits_kernel<<<rows_grid(num_dst), 128, 0, stream_of(stream)>>>(indptr, indices, num_dst, heads,
                                                                   in, self_loops, logits);
  return check_launch("attention logits");
}

status attend_async(const std::int64_t* indptr, const std::int32_t* indices, const float* logits,
                    const float* v, std::int64_t num_dst, std::int64_t hc, int heads,
                    bool self_loops, float* y, void* stream) {
  if (num_dst == 0) return status::ok();
  attend_kernel<<<rows_grid(num_dst), cols_block(hc), 0, stream_of(stream)>>>(
      indptr, indices, logits, v, num_dst, hc, heads, self_loops, y);
  return check_launch("attention aggregate");
}

status gated_sum_async(const std::int64_t* indptr, const std::int32_t* indices, const float* k,
                       const float* q, const float* v, std::int64_t num_dst, std::int64_t c,
                       float* y, void* stream) {
  if (num_dst == 0) return status::ok();
  gated_kernel<<<rows_grid(num_dst), cols_block(c), 0, stream_of(stream)>>>(indptr, indices, k, q,
                                                                            v, num_dst, c, y);
  return check_launch("gated sum");
}

status beta_mix_async(float* out, const float* xr, const float* w, std::int64_t rows,
                      std::int64_t n, void* stream) {
  if (rows == 0) return status::ok();
  beta_kernel<<<rows_grid(rows), cols_block(n), 0, stream_of(stream)>>>(out, xr, w, rows, n);
  return check_launch("beta mix");
}

}  // namespace spindle::gpu
