// CUDA backend device query: asks the runtime for devices; a missing driver or
// no device is a normal outcome reported through `status`, never an abort.
#include <cuda_runtime.h>

#include <string>

#include "gpu/detail/cuda_query.hpp"

namespace spindle::gpu::detail {

bool cuda_backend_built() { return true; }

std::vector<device_info> query_cuda_devices(std::string& status) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    // No driver (or one older than the runtime) on a machine without a GPU is the
    // common case: say so plainly, with the runtime's words after it.
    if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice || count == 0)
      status = "no GPU found";
    else
      status = "no usable GPU";
    if (err != cudaSuccess) status += std::string(" (CUDA: ") + cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky error
    return {};
  }
  std::vector<device_info> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    out.push_back({device_kind::cuda, i, prop.name, static_cast<std::uint64_t>(prop.totalGlobalMem)});
  }
  status = std::to_string(out.size()) + " CUDA device(s)";
  return out;
}

}  // namespace spindle::gpu::detail
