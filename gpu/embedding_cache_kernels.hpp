// CUDA launchers for the HPS embedding cache (paper §4, Algorithms 2-4): one
// warp per key, a ballot over the slab, the per-key logic from
// gpu/kernels/slab_probe.hpp. Device memory is laid out exactly as the host
// backend's (hps/cache); these calls are asynchronous on `stream`.
// Built only with the CUDA backend; without it every launcher answers unsupported.
#pragma once

#include <cstdint>

#include "core/status.hpp"
#include "gpu/kernels/slab_probe.hpp"

namespace spindle::gpu {

/// Trivially-copyable view of a cache in device memory (passed to kernels by value).
struct slab_cache_view {
  cache_key* keys = nullptr;          // [sets x slots]
  std::uint64_t* counters = nullptr;  // [sets x slots]
  float* values = nullptr;            // [sets x slots x dim]
  int* locks = nullptr;               // [sets], 0 = free
  std::uint64_t num_sets = 0;
  std::uint32_t slabs_per_set = 2;
  std::uint32_t dim = 0;
};

/// Query: out[i*dim..] for hits; missed[i] = 1 for misses. `g` is the call's counter.
status cache_query_async(slab_cache_view cache, const cache_key* keys, std::uint64_t n, float* out,
                         std::uint8_t* missed, std::uint64_t g, void* stream);
/// Replace: insert absent keys into empty slots or over the set's LRU slot.
status cache_replace_async(slab_cache_view cache, const cache_key* keys, std::uint64_t n,
                           const float* values, std::uint64_t g, void* stream);
/// Update: overwrite the vectors of present keys.
status cache_update_async(slab_cache_view cache, const cache_key* keys, std::uint64_t n,
                          const float* values, void* stream);

}  // namespace spindle::gpu
