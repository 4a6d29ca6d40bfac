// Host data copied into a device arena on the arena's stream: the uploads of a
// device forward pass (serving/cuda_layers.cpp, cuda_stack_layers.cpp).
#pragma once

#include "gpu/device_arena.hpp"
#include "gpu/gnn_kernels.hpp"

namespace spindle::serving::detail {

inline expected<void*> put(gpu::device_arena& arena, const void* data, std::size_t bytes) {
  SPINDLE_ASSIGN_OR_RETURN(void* p, arena.take(bytes));
  SPINDLE_TRY(gpu::copy_to_device_async(p, data, bytes, arena.stream()));
  return p;
}

}  // namespace spindle::serving::detail
