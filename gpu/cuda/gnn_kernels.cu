// CUDA kernels of GNN serving: thin wrappers over the shared per-element logic
// of gpu/kernels/ (the draw, the SpMM element, the activations), which the host
// tests check. Compiled and linked for sm_80/sm_90; run only where a GPU exists.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <map>
#include <mutex>

#include "gpu/device_arena.hpp"
#include "gpu/gnn_kernels.hpp"
#include "gpu/kernels/gat_row.hpp"
#include "gpu/kernels/sample_draw.hpp"

namespace spindle::gpu {
namespace {

status check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return status::ok();
  return make_error(errc::unavailable, "{}: {}", what, cudaGetErrorString(e));
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// One block per frontier row: thread 0 runs the draw (sequential by nature,
// at most kMaxFloydFanout steps); the block's threads then map positions to ids.
__global__ void sample_hop_kernel(csr_device_view g, const std::int64_t* frontier,
                                  std::int64_t rows, int fanout, std::uint64_t seed, int hop,
                                  std::int64_t* out, std::int64_t* counts) {
  __shared__ std::int64_t positions[kMaxFloydFanout];
  __shared__ std::int64_t taken;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t v = frontier[row];
    const std::int64_t begin = g.indptr[v], deg = g.indptr[v + 1] - begin;
    if (threadIdx.x == 0 && deg > fanout) taken = draw_row(seed, hop, v, deg, fanout, positions);
    __syncthreads();
    const std::int64_t n = deg <= fanout ? deg : taken;
    for (std::int64_t k = threadIdx.x; k < n; k += blockDim.x)
      out[row * fanout + k] = g.indices[begin + (deg <= fanout ? k : positions[k])];
    if (threadIdx.x == 0) counts[row] = n;
    __syncthreads();
  }
}

__global__ void spmm_kernel(const std::int64_t* indptr, const std::int32_t* indices, const float* x,
                            std::int64_t rows, std::int64_t width, spmm_reduce op, float* out) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    for (std::int64_t col = threadIdx.x; col < width; col += blockDim.x)
      out[row * width + col] = spmm_element(indptr, indices, x, width, row, col, op);
}

__global__ void activation_kernel(float* data, std::int64_t n, activation a, float param) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    data[i] = activate(a, data[i], param);
}

// A block per id, a thread per column.
__global__ void gather_kernel(tier_lookup lookup, const float* device_rows, const float* host_rows,
                              std::int64_t dim, const std::int64_t* ids, std::int64_t n,
                              float* out) {
  for (std::int64_t i = blockIdx.x; i < n; i += gridDim.x)
    for (std::int64_t c = threadIdx.x; c < dim; c += blockDim.x)
      out[i * dim + c] = gather_element(lookup, device_rows, host_rows, dim, ids[i], c);
}

__global__ void bias_activation_kernel(float* y, std::int64_t rows, std::int64_t cols,
                                       const float* bias, activation a) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      y[r * cols + c] = bias_activate(y[r * cols + c], bias[c], a, 0.0f);
}

__global__ void gcn_kernel(const std::int64_t* indptr, const std::int32_t* indices, const float* h,
                           const float* degree, std::int64_t rows, std::int64_t width, float* y) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x)
      y[r * width + c] = gcn_element(indptr, indices, h, degree, width, r, c);
}

// A block per source row, a thread per column.
__global__ void place_kernel(const float* src, const std::int64_t* rows_to, std::int64_t n,
                             std::int64_t dim, float* dst) {
  for (std::int64_t i = blockIdx.x; i < n; i += gridDim.x)
    for (std::int64_t c = threadIdx.x; c < dim; c += blockDim.x)
      dst[placed_at(rows_to, dim, i, c)] = src[i * dim + c];
}

// A thread per (node, head).
__global__ void gat_scores_kernel(const float* h, std::int64_t rows, std::int64_t hc, int heads,
                                  const float* att, float* scores) {
  const std::int64_t n = rows * heads, c = hc / heads;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    scores[i] = gat_node_score(h, hc, c, att, i / heads, int(i % heads));
}

// A block per dst row, a thread per column (of heads * c).
__global__ void gat_kernel(const std::int64_t* indptr, const std::int32_t* indices, const float* h,
                           std::int64_t rows, std::int64_t hc, int heads, const float* s_src,
                           const float* s_dst, float slope, float* y) {
  const std::int64_t c = hc / heads;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t col = threadIdx.x; col < hc; col += blockDim.x)
      y[r * hc + col] = gat_element(indptr, indices, h, hc, c, s_src, s_dst, heads, r, col, slope);
}

__global__ void gin_kernel(float* z, const float* x, std::int64_t n, float scale) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    z[i] = gin_combine(z[i], x[i], scale);
}

__global__ void gcn_ex_kernel(const std::int64_t* indptr, const std::int32_t* indices,
                              const float* h, const float* neighbours, float fill, std::int64_t rows,
                              std::int64_t width, float* y) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x)
      y[r * width + c] = gcn_element_ex(indptr, indices, h, neighbours, fill, width, r, c);
}

// A block per row; layer_norm's and l2's row statistics by thread 0 (rows are
// a few hundred columns: the pass is memory-bound either way).
__global__ void row_op_kernel(row_op op, float* y, std::int64_t rows, std::int64_t cols,
                              const float* p0, const float* p1, const float* p2, const float* p3,
                              float eps, bool per_column) {
  __shared__ float mean, inv_std;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = y + r * cols;
    if (op == row_op::layer_norm || op == row_op::l2_normalize) {
      if (threadIdx.x == 0) {
        if (op == row_op::layer_norm) {
          layer_norm_stats(row, cols, eps, mean, inv_std);
        } else {
          double sq = 0;
          for (std::int64_t c = 0; c < cols; ++c) sq += double(row[c]) * row[c];
          inv_std = l2_scale(sq);
        }
      }
      __syncthreads();
    }
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float w = p2 ? p2[per_column ? c : 0] : 1.0f, b = p3 ? p3[c] : 0.0f;
      switch (op) {
        case row_op::batch_norm: row[c] = batch_norm(row[c], p0[c], p1[c], eps, w, b); break;
        case row_op::layer_norm: row[c] = layer_norm(row[c], mean, inv_std, w, b); break;
        case row_op::l2_normalize: row[c] *= inv_std; break;
        case row_op::prelu: row[c] = prelu(row[c], w); break;
      }
    }
    __syncthreads();
  }
}

__global__ void combine_kernel(float* y, const float* x, std::int64_t n, bool max) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = max ? (y[i] > x[i] ? y[i] : x[i]) : y[i] + x[i];
}

__global__ void mean_heads_kernel(const float* h, std::int64_t rows, int heads, std::int64_t c,
                                  float* y) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    for (std::int64_t q = threadIdx.x; q < c; q += blockDim.x) {
      float s = 0;
      for (int k = 0; k < heads; ++k) s += h[r * heads * c + k * c + q] / float(heads);
      y[r * c + q] = s;
    }
}

status blas_check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return status::ok();
  return make_error(errc::unavailable, "{}: cuBLAS status {}", what, int(s));
}

// cuBLAS is opened on first use (dlopen), not linked: its libraries are some
// 700 MB and would cost every spindle process ~0.5 s at start, GPU or not.
struct blas_api {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  std::string error;
};

const blas_api& blas() {
  static const blas_api api = [] {
    blas_api a;
    void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      a.error = dlerror();
      return a;
    }
    a.create = reinterpret_cast<decltype(a.create)>(dlsym(lib, "cublasCreate_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(dlsym(lib, "cublasDestroy_v2"));
    a.sgemm = reinterpret_cast<decltype(a.sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    a.set_stream = reinterpret_cast<decltype(a.set_stream)>(dlsym(lib, "cublasSetStream_v2"));
    if (!a.create || !a.destroy || !a.sgemm || !a.set_stream)
      a.error = "libcublas lacks cublasCreate/Sgemm";
    return a;
  }();
  return api;
}

unsigned grid_for(std::int64_t rows) {
  return unsigned(rows < 65535 ? (rows > 0 ? rows : 1) : 65535);
}

}  // namespace

status sample_hop_async(csr_device_view g, const std::int64_t* frontier, std::int64_t rows,
                        int fanout, std::uint64_t seed, int hop, std::int64_t* out,
                        std::int64_t* counts, void* stream) {
  if (fanout < 1 || fanout > kMaxFloydFanout)
    return make_error(errc::unsupported, "sample_hop: fanout {} (the device draws 1..{})", fanout,
                      kMaxFloydFanout);
  if (rows == 0) return status::ok();
  sample_hop_kernel<<<grid_for(rows), 32, 0, as_stream(stream)>>>(g, frontier, rows, fanout, seed,
                                                                  hop, out, counts);
  return check(cudaGetLastError(), "sample_hop");
}

status spmm_async(const std::int64_t* indptr, const std::int32_t* indices, const float* x,
                  std::int64_t rows, std::int64_t width, spmm_reduce op, float* out, void* stream) {
  if (rows == 0 || width == 0) return status::ok();
  const unsigned threads = unsigned(width < 256 ? ((width + 31) / 32) * 32 : 256);
  spmm_kernel<<<grid_for(rows), threads, 0, as_stream(stream)>>>(indptr, indices, x, rows, width,
                                                                 op, out);
  return check(cudaGetLastError(), "spmm");
}

status activation_async(float* data, std::int64_t n, activation a, float param, void* stream) {
  if (n == 0 || a == activation::none) return status::ok();
  activation_kernel<<<grid_for((n + 255) / 256), 256, 0, as_stream(stream)>>>(data, n, a, param);
  return check(cudaGetLastError(), "activation");
}

status gather_async(tier_lookup lookup, const float* device_rows, const float* host_rows,
                    std::int64_t dim, const std::int64_t* ids, std::int64_t n, float* out,
                    void* stream) {
  if (n == 0 || dim == 0) return status::ok();
  const unsigned threads = unsigned(dim < 256 ? ((dim + 31) / 32) * 32 : 256);
  gather_kernel<<<grid_for(n), threads, 0, as_stream(stream)>>>(lookup, device_rows, host_rows, dim,
                                                                ids, n, out);
  return check(cudaGetLastError(), "gather");
}

status place_rows_async(const float* src, const std::int64_t* rows_to, std::int64_t n,
                        std::int64_t dim, float* dst, void* stream) {
  if (n == 0 || dim == 0) return status::ok();
  const unsigned threads = unsigned(dim < 256 ? ((dim + 31) / 32) * 32 : 256);
  place_kernel<<<grid_for(n), threads, 0, as_stream(stream)>>>(src, rows_to, n, dim, dst);
  return check(cudaGetLastError(), "place rows");
}

expected<void*> blas_create() {
  if (!blas().error.empty()) return make_error(errc::unavailable, "cuBLAS: {}", blas().error);
  cublasHandle_t h = nullptr;
  SPINDLE_TRY(blas_check(blas().create(&h), "cublasCreate"));
  return static_cast<void*>(h);
}

void blas_destroy(void* handle) {
  if (handle && blas().destroy) blas().destroy(static_cast<cublasHandle_t>(handle));
}

status blas_set_stream(void* handle, void* stream) {
  return blas_check(blas().set_stream(static_cast<cublasHandle_t>(handle), as_stream(stream)),
                    "cublasSetStream");
}

// Row-major y [n x out] (+)= a [n x in] W^T with W [out x in]: in cuBLAS's
// column-major terms y^T = op_T(W) a^T, so W is read transposed and a as is.
status gemm_wt(cublasHandle_t h, const float* a, std::int64_t n, std::int64_t in, const float* w,
               std::int64_t out, float beta, float* y) {
  const float one = 1.0f;
  return blas_check(blas().sgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, int(out), int(n), int(in), &one, w,
                                 int(in), a, int(in), &beta, y, int(out)),
                    "cublasSgemm");
}

status gemm_wt_async(void* handle, const float* a, std::int64_t n, std::int64_t in, const float* w,
                     std::int64_t out, float beta, float* y) {
  if (n == 0) return status::ok();
  return gemm_wt(static_cast<cublasHandle_t>(handle), a, n, in, w, out, beta, y);
}

unsigned threads_for(std::int64_t cols) {
  return unsigned(cols < 256 ? ((cols + 31) / 32) * 32 : 256);
}

status bias_activation_async(float* y, std::int64_t rows, std::int64_t cols, const float* bias,
                             activation act, void* stream) {
  if (rows == 0) return status::ok();
  bias_activation_kernel<<<grid_for(rows), threads_for(cols), 0, as_stream(stream)>>>(y, rows, cols,
                                                                                      bias, act);
  return check(cudaGetLastError(), "bias + activation");
}

status gcn_aggregate_async(const std::int64_t* indptr, const std::int32_t* indices, const float* h,
                           const float* degree, std::int64_t num_dst, std::int64_t width, float* y,
                           void* stream) {
  if (num_dst == 0) return status::ok();
  gcn_kernel<<<grid_for(num_dst), threads_for(width), 0, as_stream(stream)>>>(
      indptr, indices, h, degree, num_dst, width, y);
  return check(cudaGetLastError(), "gcn aggregate");
}

status gat_scores_async(const float* h, std::int64_t rows, std::int64_t hc, int heads,
                        const float* att, float* scores, void* stream) {
  const std::int64_t n = rows * heads;
  if (n == 0) return status::ok();
  gat_scores_kernel<<<grid_for((n + 255) / 256), 256, 0, as_stream(stream)>>>(h, rows, hc, heads,
                                                                              att, scores);
  return check(cudaGetLastError(), "gat scores");
}

status gat_aggregate_async(const std::int64_t* indptr, const std::int32_t* indices, const float* h,
                           std::int64_t num_dst, std::int64_t hc, int heads, const float* s_src,
                           const float* s_dst, float negative_slope, float* y, void* stream) {
  if (num_dst == 0) return status::ok();
  gat_kernel<<<grid_for(num_dst), threads_for(hc), 0, as_stream(stream)>>>(
      indptr, indices, h, num_dst, hc, heads, s_src, s_dst, negative_slope, y);
  return check(cudaGetLastError(), "gat aggregate");
}

status gin_combine_async(float* z, const float* x, std::int64_t num_dst, std::int64_t width,
                         float scale, void* stream) {
  const std::int64_t n = num_dst * width;
  if (n == 0) return status::ok();
  gin_kernel<<<grid_for((n + 255) / 256), 256, 0, as_stream(stream)>>>(z, x, n, scale);
  return check(cudaGetLastError(), "gin combine");
}

status sage_layer_async(void* handle, const std::int64_t* indptr, const std::int32_t* indices,
                        const float* x, std::int64_t num_dst, std::int64_t in, std::int64_t out,
                        const float* w_l, const float* b_l, const float* w_r, float* agg, float* y,
                        activation act, void* stream) {
  if (num_dst == 0) return status::ok();
  auto h = static_cast<cublasHandle_t>(handle);
  SPINDLE_TRY(spmm_async(indptr, indices, x, num_dst, in, spmm_reduce::mean, agg, stream));
  SPINDLE_TRY(gemm_wt(h, agg, num_dst, in, w_l, out, 0.0f, y));
  SPINDLE_TRY(gemm_wt(h, x, num_dst, in, w_r, out, 1.0f, y));  // x's first num_dst rows: dst
  const unsigned threads = unsigned(out < 256 ? ((out + 31) / 32) * 32 : 256);
  bias_activation_kernel<<<grid_for(num_dst), threads, 0, as_stream(stream)>>>(y, num_dst, out, b_l,
                                                                               act);
  return check(cudaGetLastError(), "bias + activation");
}

status gcn_aggregate_ex_async(const std::int64_t* indptr, const std::int32_t* indices,
                              const float* h, const float* neighbours, float fill,
                              std::int64_t num_dst, std::int64_t width, float* y, void* stream) {
  if (num_dst == 0) return status::ok();
  gcn_ex_kernel<<<grid_for(num_dst), threads_for(width), 0, as_stream(stream)>>>(
      indptr, indices, h, neighbours, fill, num_dst, width, y);
  return check(cudaGetLastError(), "gcn aggregate (options)");
}

status row_op_async(row_op op, float* y, std::int64_t rows, std::int64_t cols, const float* p0,
                    const float* p1, const float* p2, const float* p3, float eps, bool per_column,
                    void* stream) {
  if (rows == 0) return status::ok();
  row_op_kernel<<<grid_for(rows), threads_for(cols), 0, as_stream(stream)>>>(
      op, y, rows, cols, p0, p1, p2, p3, eps, per_column);
  return check(cudaGetLastError(), "row op");
}

status combine_async(float* y, const float* x, std::int64_t n, bool max, void* stream) {
  if (n == 0) return status::ok();
  combine_kernel<<<grid_for((n + 255) / 256), 256, 0, as_stream(stream)>>>(y, x, n, max);
  return check(cudaGetLastError(), "combine");
}

status copy_cols_async(float* dst, std::int64_t dst_cols, std::int64_t offset, const float* src,
                       std::int64_t src_cols, std::int64_t rows, void* stream) {
  if (rows == 0) return status::ok();
  return check(cudaMemcpy2DAsync(dst + offset, std::size_t(dst_cols) * 4, src,
                                 std::size_t(src_cols) * 4, std::size_t(src_cols) * 4,
                                 std::size_t(rows), cudaMemcpyDeviceToDevice, as_stream(stream)),
               "copy columns");
}

status mean_heads_async(const float* h, std::int64_t rows, int heads, std::int64_t c, float* y,
                        void* stream) {
  if (rows == 0) return status::ok();
  mean_heads_kernel<<<grid_for(rows), threads_for(c), 0, as_stream(stream)>>>(h, rows, heads, c, y);
  return check(cudaGetLastError(), "mean over heads");
}

// How many map_host calls each pinned range has (one pin serves every GPU).
std::mutex& mapped_mu() {
  static std::mutex mu;
  return mu;
}
std::map<const void*, int>& mapped() {
  static std::map<const void*, int> m;
  return m;
}

expected<const void*> map_host(const void* p, std::size_t bytes) {
  {
    std::lock_guard lock(mapped_mu());
    if (mapped()[p]++ == 0) {
      const auto e = cudaHostRegister(
          const_cast<void*>(p), bytes,
          cudaHostRegisterMapped | cudaHostRegisterPortable | cudaHostRegisterReadOnly);
      if (e != cudaSuccess) {
        mapped().erase(p);
        return check(e, "cudaHostRegister");
      }
    }
  }
  void* dev = nullptr;
  SPINDLE_TRY(
      check(cudaHostGetDevicePointer(&dev, const_cast<void*>(p), 0), "cudaHostGetDevicePointer"));
  return static_cast<const void*>(dev);
}

void unmap_host(const void* p) {
  std::lock_guard lock(mapped_mu());
  auto it = mapped().find(p);
  if (it == mapped().end() || --it->second > 0) return;
  mapped().erase(it);
  cudaHostUnregister(const_cast<void*>(p));
}

status set_device(int index) { return check(cudaSetDevice(index), "cudaSetDevice"); }

expected<int> device_count() {
  int n = 0;
  SPINDLE_TRY(check(cudaGetDeviceCount(&n), "cudaGetDeviceCount"));
  return n;
}

expected<void*> device_alloc(std::size_t bytes) {
  void* p = nullptr;
  SPINDLE_TRY(check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc"));
  return p;
}

void device_free(void* p) {
  if (p) cudaFree(p);
}

pinned_buffer::~pinned_buffer() {
  if (p_) cudaFreeHost(p_);
}

expected<void*> pinned_buffer::reserve(std::size_t bytes) {
  if (bytes <= size_) return p_;
  if (p_) cudaFreeHost(p_);
  p_ = nullptr, size_ = 0;
  SPINDLE_TRY(check(cudaMallocHost(&p_, bytes), "cudaMallocHost"));
  size_ = bytes;
  return p_;
}

expected<void*> stream_create() {
  cudaStream_t s = nullptr;
  // Non-blocking: a pipeline's stream waits for nothing on the legacy default
  // stream, so one pipeline's copies never wait for another's kernels (with
  // blocking streams every cudaMemcpy ordered all pipelines sharing the GPU).
  // What must precede a stream's work is finished before (copy_to_device waits).
  SPINDLE_TRY(check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
  return static_cast<void*>(s);
}

void stream_destroy(void* stream) {
  if (stream) cudaStreamDestroy(as_stream(stream));
}

status copy_to_device(void* dst, const void* src, std::size_t bytes) {
  SPINDLE_TRY(check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to device"));
  // From pageable memory cudaMemcpy may return before the DMA lands; the
  // non-blocking streams that read it next would not wait for it.
  return check(cudaStreamSynchronize(cudaStreamLegacy), "copy to device");
}

status copy_to_host(void* dst, const void* src, std::size_t bytes) {
  return check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy to host");
}

status copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream) {
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(stream)),
               "copy to device");
}

status copy_to_host_async(void* dst, const void* src, std::size_t bytes, void* stream) {
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)),
               "copy to host");
}

status synchronize(void* stream) {
  return check(cudaStreamSynchronize(as_stream(stream)), "synchronize");
}

}  // namespace spindle::gpu
