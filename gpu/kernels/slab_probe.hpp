// Per-key logic of HugeCTR HPS's embedding cache (paper §4, Algorithms 2-4),
// shared by the host backend (hps/cache) and the CUDA kernels
// (gpu/cuda/embedding_cache.cu). Pure functions on plain values; no state.
//
// Layout: slots {key, vector, access counter}; 32 slots form a slab (one warp
// lane per slot on a GPU); `slabs_per_set` slabs form a slab set. A key maps to
// one set (set hash) and a starting slab inside it (slab hash); probing walks
// the set's slabs from there and stops at the first slab holding the key or an
// empty slot. Slots are never emptied once filled (eviction overwrites in place),
// so "an empty slot ends the probe" stays correct.
#pragma once

#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

using cache_key = std::uint64_t;

/// The NULL sentinel of an empty slot; it cannot be stored as a key.
inline constexpr cache_key empty_key = ~cache_key{0};
inline constexpr std::uint32_t slab_width = 32;

/// murmur3's 64-bit finaliser with a seed: the two hashes differ only in seed.
SPINDLE_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t k, std::uint64_t seed) {
  k ^= seed;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

/// SLABSETHASHER(q) mod |S|.
SPINDLE_HOST_DEVICE inline std::uint64_t set_of(cache_key q, std::uint64_t num_sets) {
  return mix64(q, 0x9e3779b97f4a7c15ULL) % num_sets;
}

/// SLABHASHER(q) mod |s|: the slab a probe starts at.
SPINDLE_HOST_DEVICE inline std::uint32_t first_slab_of(cache_key q, std::uint32_t slabs_per_set) {
  return static_cast<std::uint32_t>(mix64(q, 0x2545f4914f6cdd1dULL) % slabs_per_set);
}

/// What one slab says about a key: bit i set when lane i holds the key (hit)
/// or is empty. On a GPU these are two warp ballots; on the host a loop.
struct slab_masks {
  std::uint32_t hit = 0;
  std::uint32_t empty = 0;
};

/// Host form of the two ballots over one slab's 32 keys.
SPINDLE_HOST_DEVICE inline slab_masks scan_slab(const cache_key* slab_keys, cache_key q) {
  slab_masks m;
  for (std::uint32_t lane = 0; lane < slab_width; ++lane) {
    m.hit |= static_cast<std::uint32_t>(slab_keys[lane] == q) << lane;
    m.empty |= static_cast<std::uint32_t>(slab_keys[lane] == empty_key) << lane;
  }
  return m;
}

SPINDLE_HOST_DEVICE inline std::uint32_t lowest_lane(std::uint32_t mask) {
  std::uint32_t lane = 0;
  while (!(mask & 1u)) {
    mask >>= 1;
    ++lane;
  }
  return lane;
}

enum class probe_step : std::uint8_t {
  hit,    // the key is in this slab at `lane`
  empty,  // the key is absent; `lane` is the first empty slot (insert there)
  next,   // the slab is full without the key: probe the next slab
};

struct probe_decision {
  probe_step step = probe_step::next;
  std::uint32_t lane = 0;
};

/// Algorithms 2-4, lines "if q in slab.KEYS / else if NULL in slab.KEYS".
SPINDLE_HOST_DEVICE inline probe_decision decide(slab_masks m) {
  if (m.hit != 0) return {probe_step::hit, lowest_lane(m.hit)};
  if (m.empty != 0) return {probe_step::empty, lowest_lane(m.empty)};
  return {probe_step::next, 0};
}

/// Host fast path of decide(scan_slab(slab_keys, q)): stops at the key or at the
/// first empty slot. Equivalent because slots are filled lowest lane first and
/// never emptied, so a slab's occupied slots are always a prefix of its lanes
/// (tested against the two-mask form).
SPINDLE_HOST_DEVICE inline probe_decision scan_prefix(const cache_key* slab_keys, cache_key q) {
  for (std::uint32_t lane = 0; lane < slab_width; ++lane) {
    if (slab_keys[lane] == q) return {probe_step::hit, lane};
    if (slab_keys[lane] == empty_key) return {probe_step::empty, lane};
  }
  return {probe_step::next, 0};
}

/// Index of the slot with the smallest access counter in a full set (the LRU
/// victim of Algorithm 3); ties go to the lowest slot index.
SPINDLE_HOST_DEVICE inline std::uint32_t lru_slot(const std::uint64_t* counters,
                                                  std::uint32_t slots) {
  std::uint32_t victim = 0;
  for (std::uint32_t i = 1; i < slots; ++i) {
    if (counters[i] < counters[victim]) victim = i;
  }
  return victim;
}

/// Copies one embedding vector; the kernels split it over a warp's lanes.
SPINDLE_HOST_DEVICE inline void copy_vector(float* dst, const float* src, std::uint32_t dim) {
  for (std::uint32_t i = 0; i < dim; ++i) dst[i] = src[i];
}

}  // namespace spindle::gpu
