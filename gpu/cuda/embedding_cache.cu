// CUDA kernels of the HPS embedding cache: one warp per key (grid-stride over
// keys with a 64-bit index); lane i reads slot i of a slab, two ballots give the
// slab_masks that gpu::decide() turns into hit / empty / next, exactly as the
// host backend does. Lane 0 takes the slab set's lock (the paper's exclusive
// warp access per slabset). Compiled and linked here; run only where a GPU exists.
#include <cuda_runtime.h>

#include "gpu/embedding_cache_kernels.hpp"

namespace spindle::gpu {
namespace {

constexpr unsigned full_mask = 0xffffffffu;
constexpr int warp_threads = 32;

__device__ void lock_set(int* lock, unsigned lane) {
  if (lane == 0) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
  }
  __syncwarp();
  __threadfence();
}

__device__ void unlock_set(int* lock, unsigned lane) {
  __threadfence();
  __syncwarp();
  if (lane == 0) atomicExch(lock, 0);
}

__device__ slab_masks warp_scan(const cache_key* slab_keys, cache_key q, unsigned lane) {
  const cache_key mine = slab_keys[lane];
  slab_masks m;
  m.hit = __ballot_sync(full_mask, mine == q);
  m.empty = __ballot_sync(full_mask, mine == empty_key);
  return m;
}

struct located {
  probe_step step;
  std::uint32_t slot;
};

__device__ located warp_locate(const slab_cache_view& c, std::uint64_t set, cache_key q,
                               unsigned lane) {
  const std::uint32_t per_set = c.slabs_per_set * slab_width;
  const cache_key* set_keys = c.keys + set * per_set;
  const std::uint32_t first = first_slab_of(q, c.slabs_per_set);
  for (std::uint32_t i = 0; i < c.slabs_per_set; ++i) {
    const std::uint32_t slab = (first + i) % c.slabs_per_set;
    const probe_decision d = decide(warp_scan(set_keys + slab * slab_width, q, lane));
    if (d.step != probe_step::next) return {d.step, slab * slab_width + d.lane};
  }
  return {probe_step::next, 0};
}

__device__ void warp_copy(float* dst, const float* src, std::uint32_t dim, unsigned lane) {
  for (std::uint32_t i = lane; i < dim; i += warp_threads) dst[i] = src[i];
}

__device__ std::uint64_t warp_index(unsigned& lane) {
  const std::uint64_t tid = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  lane = threadIdx.x % warp_threads;
  return tid / warp_threads;
}

__device__ std::uint64_t warp_stride() {
  return std::uint64_t{gridDim.x} * blockDim.x / warp_threads;
}

// Under `q`'s set lock, the warp calls held(slot) when `q` is cached; returns
// whether it was.
template <class Held>
__device__ bool warp_with_slot_of(const slab_cache_view& c, cache_key q, unsigned lane, Held held) {
  const std::uint64_t set = set_of(q, c.num_sets);
  lock_set(c.locks + set, lane);
  const located r = warp_locate(c, set, q, lane);
  const bool hit = r.step == probe_step::hit;
  if (hit) held(set * c.slabs_per_set * slab_width + r.slot);
  unlock_set(c.locks + set, lane);
  return hit;
}

__global__ void query_kernel(slab_cache_view c, const cache_key* keys, std::uint64_t n, float* out,
                             std::uint8_t* missed, std::uint64_t g) {
  unsigned lane = 0;
  for (std::uint64_t k = warp_index(lane); k < n; k += warp_stride()) {
    const bool hit = warp_with_slot_of(c, keys[k], lane, [&](std::uint64_t slot) {
      warp_copy(out + k * c.dim, c.values + slot * c.dim, c.dim, lane);
      if (lane == 0) c.counters[slot] = g;
    });
    if (lane == 0) missed[k] = hit ? 0 : 1;
  }
}

__global__ void replace_kernel(slab_cache_view c, const cache_key* keys, std::uint64_t n,
                               const float* values, std::uint64_t g) {
  unsigned lane = 0;
  const std::uint32_t per_set = c.slabs_per_set * slab_width;
  for (std::uint64_t k = warp_index(lane); k < n; k += warp_stride()) {
    const cache_key q = keys[k];
    const std::uint64_t set = set_of(q, c.num_sets);
    lock_set(c.locks + set, lane);
    located r = warp_locate(c, set, q, lane);
    if (r.step == probe_step::next) r.slot = lru_slot(c.counters + set * per_set, per_set);
    const std::uint64_t slot = set * per_set + r.slot;
    if (r.step != probe_step::hit) {
      warp_copy(c.values + slot * c.dim, values + k * c.dim, c.dim, lane);
      if (lane == 0) c.keys[slot] = q;
    }
    if (lane == 0) c.counters[slot] = g;
    unlock_set(c.locks + set, lane);
  }
}

__global__ void update_kernel(slab_cache_view c, const cache_key* keys, std::uint64_t n,
                              const float* values) {
  unsigned lane = 0;
  for (std::uint64_t k = warp_index(lane); k < n; k += warp_stride()) {
    warp_with_slot_of(c, keys[k], lane, [&](std::uint64_t slot) {
      warp_copy(c.values + slot * c.dim, values + k * c.dim, c.dim, lane);
    });
  }
}

constexpr int block_threads = 256;

unsigned grid_for(std::uint64_t n) {
  const std::uint64_t warps_per_block = block_threads / warp_threads;
  const std::uint64_t blocks = (n + warps_per_block - 1) / warps_per_block;
  return static_cast<unsigned>(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

status launched(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return status::ok();
  return make_error(errc::unavailable, "{}: {}", what, cudaGetErrorString(err));
}

}  // namespace

status cache_query_async(slab_cache_view cache, const cache_key* keys, std::uint64_t n, float* out,
                         std::uint8_t* missed, std::uint64_t g, void* stream) {
  query_kernel<<<grid_for(n), block_threads, 0, static_cast<cudaStream_t>(stream)>>>(
      cache, keys, n, out, missed, g);
  return launched("embedding cache query kernel");
}

status cache_replace_async(slab_cache_view cache, const cache_key* keys, std::uint64_t n,
                           const float* values, std::uint64_t g, void* stream) {
  replace_kernel<<<grid_for(n), block_threads, 0, static_cast<cudaStream_t>(stream)>>>(
      cache, keys, n, values, g);
  return launched("embedding cache replace kernel");
}

status cache_update_async(slab_cache_view cache, const cache_key* keys, std::uint64_t n,
                          const float* values, void* stream) {
  update_kernel<<<grid_for(n), block_threads, 0, static_cast<cudaStream_t>(stream)>>>(cache, keys,
                                                                                      n, values);
  return launched("embedding cache update kernel");
}

}  // namespace spindle::gpu
