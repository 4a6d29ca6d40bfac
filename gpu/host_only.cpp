// Built instead of cuda/device_query.cu when no CUDA compiler was found.
#include "gpu/detail/cuda_query.hpp"
#include "gpu/device_arena.hpp"
#include "gpu/embedding_cache_kernels.hpp"
#include "gpu/gnn_kernels.hpp"

namespace spindle::gpu::detail {

bool cuda_backend_built() { return false; }

std::vector<device_info> query_cuda_devices(std::string& status) {
  status = "built without CUDA";
  return {};
}

}  // namespace spindle::gpu::detail

namespace spindle::gpu {

namespace {
status no_cuda(const char* what) {
  return make_error(errc::unsupported, "{}: this binary was built without CUDA", what);
}
}  // namespace

status cache_query_async(slab_cache_view, const cache_key*, std::uint64_t, float*, std::uint8_t*,
                         std::uint64_t, void*) {
  return no_cuda("embedding cache query kernel");
}
status cache_replace_async(slab_cache_view, const cache_key*, std::uint64_t, const float*,
                           std::uint64_t, void*) {
  return no_cuda("embedding cache replace kernel");
}
status cache_update_async(slab_cache_view, const cache_key*, std::uint64_t, const float*, void*) {
  return no_cuda("embedding cache update kernel");
}

status sample_hop_async(csr_device_view, const std::int64_t*, std::int64_t, int, std::uint64_t, int,
                        std::int64_t*, std::int64_t*, void*) {
  return no_cuda("sampling kernel");
}
status spmm_async(const std::int64_t*, const std::int32_t*, const float*, std::int64_t,
                  std::int64_t, spmm_reduce, float*, void*) {
  return no_cuda("SpMM kernel");
}
status activation_async(float*, std::int64_t, activation, float, void*) {
  return no_cuda("activation kernel");
}
status gather_async(tier_lookup, const float*, const float*, std::int64_t, const std::int64_t*,
                    std::int64_t, float*, void*) {
  return no_cuda("gather kernel");
}
status place_rows_async(const float*, const std::int64_t*, std::int64_t, std::int64_t, float*,
                        void*) {
  return no_cuda("place kernel");
}
expected<const void*> map_host(const void*, std::size_t) { return no_cuda("UVA mapping"); }
expected<void*> blas_create() { return no_cuda("cuBLAS"); }
status gemm_wt_async(void*, const float*, std::int64_t, std::int64_t, const float*, std::int64_t,
                     float, float*) {
  return no_cuda("GEMM");
}
status bias_activation_async(float*, std::int64_t, std::int64_t, const float*, activation, void*) {
  return no_cuda("bias + activation kernel");
}
status gcn_aggregate_async(const std::int64_t*, const std::int32_t*, const float*, const float*,
                           std::int64_t, std::int64_t, float*, void*) {
  return no_cuda("GCN aggregation kernel");
}
status gat_scores_async(const float*, std::int64_t, std::int64_t, int, const float*, float*,
                        void*) {
  return no_cuda("GAT score kernel");
}
status gat_aggregate_async(const std::int64_t*, const std::int32_t*, const float*, std::int64_t,
                           std::int64_t, int, const float*, const float*, float, float*, void*) {
  return no_cuda("GAT aggregation kernel");
}
status attention_logits_async(const std::int64_t*, const std::int32_t*, std::int64_t, int,
                              const attention_inputs&, bool, float*, void*) {
  return no_cuda("attention logit kernel");
}
status attend_async(const std::int64_t*, const std::int32_t*, const float*, const float*,
                    std::int64_t, std::int64_t, int, bool, float*, void*) {
  return no_cuda("attention aggregation kernel");
}
status gated_sum_async(const std::int64_t*, const std::int32_t*, const float*, const float*,
                       const float*, std::int64_t, std::int64_t, float*, void*) {
  return no_cuda("gated sum kernel");
}
status beta_mix_async(float*, const float*, const float*, std::int64_t, std::int64_t, void*) {
  return no_cuda("beta mix kernel");
}
status gin_combine_async(float*, const float*, std::int64_t, std::int64_t, float, void*) {
  return no_cuda("GIN combine kernel");
}
status gcn_aggregate_ex_async(const std::int64_t*, const std::int32_t*, const float*, const float*,
                              float, std::int64_t, std::int64_t, float*, void*) {
  return no_cuda("GCN aggregation kernel");
}
status row_op_async(row_op, float*, std::int64_t, std::int64_t, const float*, const float*,
                    const float*, const float*, float, bool, void*) {
  return no_cuda("row op kernel");
}
status combine_async(float*, const float*, std::int64_t, bool, void*) {
  return no_cuda("combine kernel");
}
status copy_cols_async(float*, std::int64_t, std::int64_t, const float*, std::int64_t,
                       std::int64_t, void*) {
  return no_cuda("device copy");
}
status mean_heads_async(const float*, std::int64_t, int, std::int64_t, float*, void*) {
  return no_cuda("mean over heads kernel");
}
void blas_destroy(void*) {}
status blas_set_stream(void*, void*) { return no_cuda("cuBLAS"); }
status sage_layer_async(void*, const std::int64_t*, const std::int32_t*, const float*, std::int64_t,
                        std::int64_t, std::int64_t, const float*, const float*, const float*,
                        float*, float*, activation, void*) {
  return no_cuda("GraphSAGE layer");
}
void unmap_host(const void*) {}
status set_device(int) { return no_cuda("set device"); }
expected<int> device_count() { return no_cuda("device count"); }
expected<void*> device_alloc(std::size_t) { return no_cuda("device memory"); }
void device_free(void*) {}
expected<void*> stream_create() { return no_cuda("CUDA stream"); }
pinned_buffer::~pinned_buffer() = default;
expected<void*> pinned_buffer::reserve(std::size_t) { return no_cuda("pinned host memory"); }
void stream_destroy(void*) {}
status copy_to_device(void*, const void*, std::size_t) { return no_cuda("copy to device"); }
status copy_to_host(void*, const void*, std::size_t) { return no_cuda("copy to host"); }
status copy_to_device_async(void*, const void*, std::size_t, void*) {
  return no_cuda("copy to device");
}
status copy_to_host_async(void*, const void*, std::size_t, void*) {
  return no_cuda("copy to host");
}
status synchronize(void*) { return no_cuda("synchronize"); }

}  // namespace spindle::gpu
