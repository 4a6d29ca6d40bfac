// The L1 of the hierarchical parameter server as the lookup session sees it:
// HPS's slab-set cache (Algorithms 2-4 and Dump), in host memory
// (embedding_cache) or in a GPU's memory (device_embedding_cache, the CUDA
// kernels of gpu/cuda/embedding_cache.cu). Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "gpu/kernels/slab_probe.hpp"

namespace spindle::hps {

using gpu::cache_key;

/// Keys a Query did not find, with their positions in the query batch.
struct cache_misses {
  std::vector<cache_key> keys;
  std::vector<std::uint32_t> positions;
  void clear() {
    keys.clear();
    positions.clear();
  }
};

struct cache_options {
  std::uint64_t capacity = 0;       // slots wanted; rounded up to whole slab sets
  std::uint32_t dim = 0;            // floats per embedding vector
  std::uint32_t slabs_per_set = 2;  // the paper's choice for Ampere
  /// How a slot holds its vector: 32 (float32) or 8 (row-wise int8 codes with
  /// their float32 scale and bias, nn/quantized_rows.hpp's layout: dim + 8 bytes,
  /// a quarter of float32's at dim 128; host cache only).
  int bits = 32;
};

class l1_cache {
 public:
  virtual ~l1_cache() = default;
  virtual std::string_view where() const = 0;  // "host" or "cuda"
  /// Algorithm 2: values of hits; misses (cleared first) lists the others.
  virtual status query(std::span<const cache_key> keys, std::span<float> values,
                       cache_misses& misses) = 0;
  /// Algorithm 3: absent keys into empty slots, else over the set's LRU slot.
  virtual status replace(std::span<const cache_key> keys, std::span<const float> values) = 0;
  /// Algorithm 4: overwrites present keys' vectors; returns how many were present.
  virtual expected<std::uint64_t> update(std::span<const cache_key> keys,
                                         std::span<const float> values) = 0;
  /// Appends the keys held by sets [set_begin, set_end) (Dump).
  virtual void dump(std::uint64_t set_begin, std::uint64_t set_end,
                    std::vector<cache_key>& out) const = 0;
  virtual std::uint64_t num_sets() const = 0;
  virtual std::uint32_t dim() const = 0;
};

/// The batched calls every l1_cache implementation overrides (query, replace,
/// update, dump), declared once; each implementation says beside it how it runs them.
#define SPINDLE_L1_CACHE_OVERRIDES                                                               \
  status query(std::span<const cache_key> keys, std::span<float> values, cache_misses& misses)   \
      override;                                                                                  \
  status replace(std::span<const cache_key> keys, std::span<const float> values) override;       \
  expected<std::uint64_t> update(std::span<const cache_key> keys, std::span<const float> values) \
      override;                                                                                  \
  void dump(std::uint64_t set_begin, std::uint64_t set_end, std::vector<cache_key>& out)         \
      const override

}  // namespace spindle::hps
