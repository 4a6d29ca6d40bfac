// HPS's L1 on every GPU of a server (HugeCTR HPS §5-6): one
// device_embedding_cache per GPU; queries are spread over the replicas, and
// every insertion (Algorithm 3), online update (Algorithm 4) and refresh
// reaches all of them: keys and vectors go up to GPU 0 once and NCCL
// broadcasts them to the others, where the slab kernels apply them from device
// memory. Needs NCCL and that many GPUs: create() names why not. Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/device_arena.hpp"
#include "gpu/nccl_exchange.hpp"
#include "hps/cache/device_cache.hpp"

namespace spindle::hps {

class replicated_l1_cache final : public l1_cache {
 public:
  static expected<std::unique_ptr<replicated_l1_cache>> create(const cache_options& o, int gpus);
  std::string_view where() const override { return "cuda"; }
  /// query runs on the next replica in turn; update's count is GPU 0's (every
  /// replica gets the vectors of the keys it holds); dump gives the union of every
  /// replica's keys in those sets (their LRU choices differ).
  SPINDLE_L1_CACHE_OVERRIDES;
  std::uint64_t num_sets() const override { return replicas_.front()->num_sets(); }
  std::uint32_t dim() const override { return replicas_.front()->dim(); }
  std::size_t replicas() const { return replicas_.size(); }

 private:
  struct inbox {  // a GPU's landing buffers for a broadcast
    gpu::device_buffer keys, values;
  };
  enum class op { replace, update };
  replicated_l1_cache() = default;
  // Uploads to GPU 0, broadcasts to the others, applies on replicas [first, n).
  status broadcast_apply(std::span<const cache_key> keys, std::span<const float> values, op what,
                         std::size_t first);

  std::vector<std::unique_ptr<device_embedding_cache>> replicas_;
  std::unique_ptr<gpu::nccl_group> nccl_;
  std::mutex write_mu_;         // one broadcast at a time
  std::vector<inbox> inboxes_;  // per GPU; guarded by write_mu_
  std::atomic<std::uint64_t> next_{0};
};

/// make_l1_cache for `gpus` GPUs: replicated when gpus > 1.
expected<std::unique_ptr<l1_cache>> make_l1_cache(const cache_options& o, bool on_device, int gpus);

}  // namespace spindle::hps
