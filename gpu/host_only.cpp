// Built instead of cuda/device_query.cu when no CUDA compiler was found.
#include "gpu/detail/cuda_query.hpp"

namespace spindle::gpu::detail {

bool cuda_backend_built() { return false; }

std::vector<device_info> query_cuda_devices(std::string& status) {
  status = "built without CUDA";
  return {};
}

}  // namespace spindle::gpu::detail
