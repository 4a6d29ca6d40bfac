#include "hps/cache/embedding_cache.hpp"

#include <algorithm>
#include <thread>

#include "nn/quantized_row_bytes.hpp"
#include "nn/quantized_rows.hpp"

namespace spindle::hps {

using gpu::probe_step;

expected<std::unique_ptr<embedding_cache>> embedding_cache::create(const cache_options& o) {
  SPINDLE_TRY(validate(o));
  const std::uint64_t per_set = std::uint64_t{o.slabs_per_set} * gpu::slab_width;
  const std::uint64_t sets = (o.capacity + per_set - 1) / per_set;
  return std::unique_ptr<embedding_cache>(new embedding_cache(o, sets));
}

status embedding_cache::validate(const cache_options& o) {
  if (o.dim == 0) return make_error(errc::invalid_argument, "embedding cache: dim must be > 0");
  if (o.capacity == 0) {
    return make_error(errc::invalid_argument, "embedding cache: capacity must be > 0 slots");
  }
  if (o.bits != 32 && o.bits != 8)
    return make_error(errc::invalid_argument,
                      "embedding cache: {}-bit vectors are not built (32: float32, 8: row-wise "
                      "int8)",
                      o.bits);
  if (o.slabs_per_set == 0 || o.slabs_per_set > 64) {
    return make_error(errc::invalid_argument, "embedding cache: slabs_per_set={} (must be 1..64)",
                      o.slabs_per_set);
  }
  return status::ok();
}

embedding_cache::embedding_cache(const cache_options& o, std::uint64_t num_sets)
    : dim_(o.dim),
      slabs_per_set_(o.slabs_per_set),
      slots_per_set_(o.slabs_per_set * gpu::slab_width),
      num_sets_(num_sets),
      keys_(num_sets * slots_per_set_, gpu::empty_key),
      counters_(num_sets * slots_per_set_, 0),
      bits_(o.bits),
      row_bytes_(nn::quantized_row_bytes(o.dim, 8)),
      values_(o.bits == 32 ? num_sets * slots_per_set_ * dim_ : 0, 0.0f),
      codes_(o.bits == 8 ? num_sets * slots_per_set_ * row_bytes_ : 0, 0),
      locks_(new set_lock[num_sets]) {}

void embedding_cache::read_slot(std::uint64_t slot, float* out) const {
  if (bits_ == 8) return nn::dequantize_row(codes_.data() + slot * row_bytes_, dim_, 8, out);
  gpu::copy_vector(out, values_.data() + slot * dim_, dim_);
}

void embedding_cache::write_slot(std::uint64_t slot, const float* row,
                                 const std::uint8_t* codes) {
  if (bits_ == 8) {
    std::copy_n(codes, row_bytes_, codes_.data() + slot * row_bytes_);
    return;
  }
  gpu::copy_vector(values_.data() + slot * dim_, row, dim_);
}

// Critical sections are a probe of <= slabs_per_set slabs plus one vector copy,
// so spin briefly, then yield: on a 2-core machine a holder may be descheduled.
void embedding_cache::lock(std::uint64_t set) const {
  for (int spins = 0;; ++spins) {
    if (!locks_[set].held.load(std::memory_order_relaxed) &&
        !locks_[set].held.exchange(true, std::memory_order_acquire)) {
      return;
    }
    if (spins > 64) std::this_thread::yield();
  }
}

void embedding_cache::unlock(std::uint64_t set) const {
  locks_[set].held.store(false, std::memory_order_release);
}

// Batches are random over the sets: pull a later key's first slab and lock into
// cache while this key is probed (the host's stand-in for a GPU's many warps).
void embedding_cache::prefetch(cache_key q) const {
  const std::uint64_t set = gpu::set_of(q, num_sets_);
  const cache_key* slab =
      keys_.data() + slot_index(set, gpu::first_slab_of(q, slabs_per_set_) * gpu::slab_width);
  __builtin_prefetch(slab);
  __builtin_prefetch(slab + 8);
  __builtin_prefetch(&locks_[set]);
}

embedding_cache::locate_result embedding_cache::locate(std::uint64_t set, cache_key q) const {
  const std::uint32_t first = gpu::first_slab_of(q, slabs_per_set_);
  const cache_key* set_keys = keys_.data() + slot_index(set, 0);
  for (std::uint32_t i = 0; i < slabs_per_set_; ++i) {
    const std::uint32_t slab = (first + i) % slabs_per_set_;
    const auto d = gpu::scan_prefix(set_keys + slab * gpu::slab_width, q);
    if (d.step != probe_step::next) return {d.step, slab * gpu::slab_width + d.lane};
  }
  return {probe_step::next, 0};  // searched every slab: absent and the set is full
}

status embedding_cache::check_batch(std::span<const cache_key> keys, std::size_t values,
                                    const char* op) const {
  if (values != keys.size() * dim_) {
    return make_error(errc::invalid_argument,
                      "embedding cache {}: {} keys need {} values (dim {}), got {}", op,
                      keys.size(), keys.size() * dim_, dim_, values);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == gpu::empty_key) {
      return make_error(errc::invalid_argument,
                        "embedding cache {}: keys[{}]={:#x} is the reserved empty key", op, i,
                        keys[i]);
    }
  }
  return status::ok();
}

template <class Held>
bool embedding_cache::with_slot_of(cache_key q, Held&& held) {
  const std::uint64_t set = gpu::set_of(q, num_sets_);
  lock(set);
  const locate_result r = locate(set, q);
  if (r.step == probe_step::hit) held(slot_index(set, r.slot));
  unlock(set);
  return r.step == probe_step::hit;
}

status embedding_cache::query(std::span<const cache_key> keys, std::span<float> values,
                              cache_misses& misses) {
  misses.clear();
  SPINDLE_TRY(check_batch(keys, values.size(), "query"));
  const std::uint64_t g = global_counter_.fetch_add(1, std::memory_order_relaxed) + 1;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + prefetch_distance < keys.size()) prefetch(keys[i + prefetch_distance]);
    const bool hit = with_slot_of(keys[i], [&](std::uint64_t slot) {
      read_slot(slot, values.data() + i * dim_);
      counters_[slot] = g;
    });
    if (!hit) {
      misses.keys.push_back(keys[i]);
      misses.positions.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return status::ok();
}

status embedding_cache::replace(std::span<const cache_key> keys, std::span<const float> values) {
  SPINDLE_TRY(check_batch(keys, values.size(), "replace"));
  const std::uint64_t g = global_counter_.load(std::memory_order_relaxed);
  std::vector<std::uint8_t> codes(bits_ == 8 ? row_bytes_ : 0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // A row int8 cannot hold (a NaN or infinity) is not cached: it stays a miss.
    if (bits_ == 8 && !nn::quantize_row(values.data() + i * dim_, dim_, 8, codes.data())) continue;
    const std::uint64_t set = gpu::set_of(keys[i], num_sets_);
    lock(set);
    locate_result r = locate(set, keys[i]);
    if (r.step == probe_step::next) {
      r.slot = gpu::lru_slot(counters_.data() + slot_index(set, 0), slots_per_set_);
    } else if (r.step == probe_step::empty) {
      size_.fetch_add(1, std::memory_order_relaxed);
    }
    const std::uint64_t slot = slot_index(set, r.slot);
    if (r.step != probe_step::hit) {
      keys_[slot] = keys[i];
      write_slot(slot, values.data() + i * dim_, codes.data());
    }
    counters_[slot] = g;
    unlock(set);
  }
  return status::ok();
}

expected<std::uint64_t> embedding_cache::update(std::span<const cache_key> keys,
                                                std::span<const float> values) {
  SPINDLE_TRY(check_batch(keys, values.size(), "update"));
  std::uint64_t updated = 0;
  std::vector<std::uint8_t> codes(bits_ == 8 ? row_bytes_ : 0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (bits_ == 8 && !nn::quantize_row(values.data() + i * dim_, dim_, 8, codes.data())) continue;
    with_slot_of(keys[i], [&](std::uint64_t slot) {
      write_slot(slot, values.data() + i * dim_, codes.data());
      ++updated;
    });
  }
  return updated;
}

void embedding_cache::dump(std::uint64_t set_begin, std::uint64_t set_end,
                           std::vector<cache_key>& out) const {
  set_end = std::min(set_end, num_sets_);
  for (std::uint64_t set = set_begin; set < set_end; ++set) {
    lock(set);
    for (std::uint32_t s = 0; s < slots_per_set_; ++s) {
      const cache_key k = keys_[slot_index(set, s)];
      if (k != gpu::empty_key) out.push_back(k);
    }
    unlock(set);
  }
}

}  // namespace spindle::hps
