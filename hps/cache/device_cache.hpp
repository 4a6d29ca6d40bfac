// HPS's L1 in a GPU's memory (HugeCTR HPS §4): the same slab-set layout as the
// host cache, queried, replaced and updated by the CUDA kernels of
// gpu/cuda/embedding_cache.cu (one warp per key, per-key logic shared with the
// host backend). Each call copies its keys and vectors in and out of device
// memory. Needs a CUDA device: create() names why not. Thread-safe (one call
// at a time on the device).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "gpu/embedding_cache_kernels.hpp"
#include "hps/cache/l1_cache.hpp"

namespace spindle::hps {

class device_embedding_cache final : public l1_cache {
 public:
  /// A cache in the memory of GPU `gpu` (every call then runs there).
  static expected<std::unique_ptr<device_embedding_cache>> create(const cache_options& o,
                                                                  int gpu = 0);
  ~device_embedding_cache() override;
  std::string_view where() const override { return "cuda"; }
  SPINDLE_L1_CACHE_OVERRIDES;
  std::uint64_t num_sets() const override { return view_.num_sets; }
  std::uint32_t dim() const override { return view_.dim; }
  int gpu() const { return gpu_; }

  /// Algorithms 3 and 4 over `n` keys and vectors already in this GPU's memory
  /// (a broadcast's landing buffers), without a copy from the host.
  status replace_from_device(const cache_key* keys, std::size_t n, const float* values);
  status update_from_device(const cache_key* keys, std::size_t n, const float* values);

 private:
  device_embedding_cache() = default;
  // Device scratch for a call's keys, values and miss flags (grown as needed).
  status stage(std::size_t keys);

  mutable std::mutex mu_;
  int gpu_ = 0;
  gpu::slab_cache_view view_;
  std::atomic<std::uint64_t> counter_{0};
  void* keys_in_ = nullptr;
  void* values_io_ = nullptr;
  void* missed_ = nullptr;
  std::size_t staged_keys_ = 0;
};

/// The L1 a lookup session builds: on the GPU when `device` is cuda (and one
/// is usable), else in host memory.
expected<std::unique_ptr<l1_cache>> make_l1_cache(const cache_options& o, bool on_device);

}  // namespace spindle::hps
