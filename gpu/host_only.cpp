// Built instead of cuda/device_query.cu when no CUDA compiler was found.
#include "gpu/detail/cuda_query.hpp"
#include "gpu/embedding_cache_kernels.hpp"

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

}  // namespace spindle::gpu
