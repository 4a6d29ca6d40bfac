// Level 1 of the hierarchical parameter server (HugeCTR HPS §4): a fixed-size
// slab-set embedding cache with LRU counters, host backend. The per-key probe
// is gpu/kernels/slab_probe.hpp, the same code the CUDA kernels run.
// Thread-safe: every batched call may run concurrently with any other; a set is
// touched only under its own lock (the paper's one-warp-per-slabset exclusion).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "gpu/kernels/slab_probe.hpp"
#include "hps/cache/l1_cache.hpp"

namespace spindle::hps {

class embedding_cache final : public l1_cache {
 public:
  /// Validates the options (dim > 0, capacity > 0, 1 <= slabs_per_set <= 64)
  /// and allocates every slot empty.
  static expected<std::unique_ptr<embedding_cache>> create(const cache_options& options);
  /// The checks create() makes (shared with the device cache), allocating nothing.
  static status validate(const cache_options& options);

  std::string_view where() const override { return "host"; }
  /// Algorithm 2 (query): values[i*dim ..] = vector of keys[i] for every hit;
  /// misses (cleared first) lists the others. Bumps the global counter once per call.
  /// Algorithm 3 (replace): inserts each absent key into an empty slot of its set,
  /// else over the set's least recently used slot; keys already present only get
  /// their counter refreshed (their vectors are never overwritten).
  /// Algorithm 4 (update): overwrites the vectors of keys that are present; returns
  /// how many were. Absent keys are ignored.
  /// dump appends the keys held by sets [set_begin, set_end) to `out` (Dump).
  SPINDLE_L1_CACHE_OVERRIDES;

  std::uint64_t num_sets() const override { return num_sets_; }
  std::uint64_t capacity() const { return num_sets_ * slots_per_set_; }
  std::uint64_t size() const { return size_.load(std::memory_order_relaxed); }
  std::uint32_t dim() const override { return dim_; }
  std::uint32_t slots_per_set() const { return slots_per_set_; }
  int bits() const { return bits_; }
  /// Bytes the slots' vectors take (keys and counters aside).
  std::uint64_t vector_bytes() const { return values_.size() * sizeof(float) + codes_.size(); }

 private:
  embedding_cache(const cache_options& options, std::uint64_t num_sets);

  struct locate_result {
    gpu::probe_step step;
    std::uint32_t slot;  // index within the set
  };
  /// Probes `q`'s set from its first slab; caller holds the set's lock.
  locate_result locate(std::uint64_t set, cache_key q) const;
  /// Under `q`'s set lock, calls held(slot) when `q` is cached; returns whether it was.
  template <class Held>
  bool with_slot_of(cache_key q, Held&& held);
  void prefetch(cache_key q) const;
  /// out[0..dim) = the vector in `slot` (dequantised when int8).
  void read_slot(std::uint64_t slot, float* out) const;
  /// The vector of slot `slot` = `row` as stored: float32, or `codes` (one row
  /// quantised by the caller) when int8.
  void write_slot(std::uint64_t slot, const float* row, const std::uint8_t* codes);
  void lock(std::uint64_t set) const;
  void unlock(std::uint64_t set) const;
  status check_batch(std::span<const cache_key> keys, std::size_t values, const char* op) const;
  std::uint64_t slot_index(std::uint64_t set, std::uint32_t slot) const {
    return set * slots_per_set_ + slot;
  }

  static constexpr std::size_t prefetch_distance = 4;

  std::uint32_t dim_;
  std::uint32_t slabs_per_set_;
  std::uint32_t slots_per_set_;
  std::uint64_t num_sets_;
  std::vector<cache_key> keys_;          // [sets x slots], empty_key when free
  std::vector<std::uint64_t> counters_;  // last global counter that touched a slot
  int bits_;
  std::size_t row_bytes_;                // bytes of an int8 slot (dim codes, scale, bias)
  std::vector<float> values_;            // [sets x slots x dim] with 32 bits, else empty
  std::vector<std::uint8_t> codes_;      // [sets x slots x row_bytes_] with 8 bits, else empty
  // One spin lock per set, each on its own cache line: hot sets of a power-law
  // stream are locked by every thread, and shared lines would bounce between
  // cores. 64 B per set is under 1% of a set's 64 vectors.
  struct alignas(64) set_lock {
    std::atomic<bool> held{false};
  };
  std::unique_ptr<set_lock[]> locks_;
  std::atomic<std::uint64_t> global_counter_{0};
  std::atomic<std::uint64_t> size_{0};
};

}  // namespace spindle::hps
