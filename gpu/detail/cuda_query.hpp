// Boundary between the host code and the optional CUDA backend: implemented by
// cuda/device_query.cu when CUDA is built, by host_only.cpp otherwise.
#pragma once

#include <string>
#include <vector>

#include "gpu/device.hpp"

namespace spindle::gpu::detail {

bool cuda_backend_built();
/// CUDA devices the driver reports; empty with `status` saying why when none.
std::vector<device_info> query_cuda_devices(std::string& status);

}  // namespace spindle::gpu::detail
