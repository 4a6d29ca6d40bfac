#include "hps/cache/device_cache.hpp"

#include "gpu/gnn_kernels.hpp"
#include "hps/cache/embedding_cache.hpp"

namespace spindle::hps {

expected<std::unique_ptr<device_embedding_cache>> device_embedding_cache::create(
    const cache_options& o, int gpu) {
  SPINDLE_TRY(embedding_cache::validate(o));  // the host cache's checks, named the same way
  SPINDLE_TRY(gpu::set_device(gpu));
  std::unique_ptr<device_embedding_cache> c(new device_embedding_cache);
  c->gpu_ = gpu;
  auto& v = c->view_;
  v.slabs_per_set = o.slabs_per_set;
  v.dim = o.dim;
  const std::uint64_t per_set = std::uint64_t{o.slabs_per_set} * gpu::slab_width;
  v.num_sets = (o.capacity + per_set - 1) / per_set;
  const std::uint64_t slots = v.num_sets * per_set;
  auto alloc = [](std::size_t bytes, const void* init) -> expected<void*> {
    SPINDLE_ASSIGN_OR_RETURN(void* p, gpu::device_alloc(bytes));
    if (auto st = gpu::copy_to_device(p, init, bytes); !st) {
      gpu::device_free(p);
      return st;
    }
    return p;
  };
  const std::vector<cache_key> empty(slots, gpu::empty_key);
  const std::vector<std::uint64_t> zeros(slots, 0);
  const std::vector<float> values(slots * o.dim, 0.0f);
  const std::vector<int> locks(v.num_sets, 0);
  SPINDLE_ASSIGN_OR_RETURN(void* k, alloc(slots * sizeof(cache_key), empty.data()));
  v.keys = static_cast<cache_key*>(k);
  SPINDLE_ASSIGN_OR_RETURN(void* n, alloc(slots * 8, zeros.data()));
  v.counters = static_cast<std::uint64_t*>(n);
  SPINDLE_ASSIGN_OR_RETURN(void* f, alloc(values.size() * 4, values.data()));
  v.values = static_cast<float*>(f);
  SPINDLE_ASSIGN_OR_RETURN(void* l, alloc(locks.size() * sizeof(int), locks.data()));
  v.locks = static_cast<int*>(l);
  return c;
}

device_embedding_cache::~device_embedding_cache() {
  (void)gpu::set_device(gpu_);
  for (void* p : {static_cast<void*>(view_.keys), static_cast<void*>(view_.counters),
                  static_cast<void*>(view_.values), static_cast<void*>(view_.locks), keys_in_,
                  values_io_, missed_})
    gpu::device_free(p);
}

status device_embedding_cache::stage(std::size_t keys) {
  if (keys <= staged_keys_) return status::ok();
  for (void* p : {keys_in_, values_io_, missed_}) gpu::device_free(p);
  keys_in_ = values_io_ = missed_ = nullptr;
  staged_keys_ = 0;
  SPINDLE_ASSIGN_OR_RETURN(keys_in_, gpu::device_alloc(keys * sizeof(cache_key)));
  SPINDLE_ASSIGN_OR_RETURN(values_io_, gpu::device_alloc(keys * view_.dim * 4));
  SPINDLE_ASSIGN_OR_RETURN(missed_, gpu::device_alloc(keys));
  staged_keys_ = keys;
  return status::ok();
}

status device_embedding_cache::query(std::span<const cache_key> keys, std::span<float> values,
                                     cache_misses& misses) {
  misses.clear();
  if (values.size() < keys.size() * view_.dim)
    return make_error(errc::invalid_argument, "embedding cache query: {} values for {} keys x {}",
                      values.size(), keys.size(), view_.dim);
  if (keys.empty()) return status::ok();
  std::lock_guard lock(mu_);
  SPINDLE_TRY(gpu::set_device(gpu_));
  SPINDLE_TRY(stage(keys.size()));
  SPINDLE_TRY(gpu::copy_to_device(keys_in_, keys.data(), keys.size_bytes()));
  SPINDLE_TRY(gpu::cache_query_async(view_, static_cast<const cache_key*>(keys_in_), keys.size(),
                                     static_cast<float*>(values_io_),
                                     static_cast<std::uint8_t*>(missed_), ++counter_, nullptr));
  SPINDLE_TRY(gpu::synchronize(nullptr));
  std::vector<std::uint8_t> missed(keys.size());
  SPINDLE_TRY(gpu::copy_to_host(missed.data(), missed_, missed.size()));
  SPINDLE_TRY(gpu::copy_to_host(values.data(), values_io_, keys.size() * view_.dim * 4));
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (missed[i]) misses.keys.push_back(keys[i]), misses.positions.push_back(std::uint32_t(i));
  return status::ok();
}

status device_embedding_cache::replace(std::span<const cache_key> keys,
                                       std::span<const float> values) {
  if (keys.empty()) return status::ok();
  std::lock_guard lock(mu_);
  SPINDLE_TRY(gpu::set_device(gpu_));
  SPINDLE_TRY(stage(keys.size()));
  SPINDLE_TRY(gpu::copy_to_device(keys_in_, keys.data(), keys.size_bytes()));
  SPINDLE_TRY(gpu::copy_to_device(values_io_, values.data(), keys.size() * view_.dim * 4));
  SPINDLE_TRY(gpu::cache_replace_async(view_, static_cast<const cache_key*>(keys_in_), keys.size(),
                                       static_cast<const float*>(values_io_), ++counter_, nullptr));
  return gpu::synchronize(nullptr);
}

expected<std::uint64_t> device_embedding_cache::update(std::span<const cache_key> keys,
                                                       std::span<const float> values) {
  if (keys.empty()) return std::uint64_t{0};
  std::vector<float> scratch(keys.size() * view_.dim);
  cache_misses misses;
  SPINDLE_TRY(query(keys, scratch, misses));  // how many are present (Algorithm 4's count)
  std::lock_guard lock(mu_);
  SPINDLE_TRY(gpu::set_device(gpu_));
  SPINDLE_TRY(gpu::copy_to_device(keys_in_, keys.data(), keys.size_bytes()));
  SPINDLE_TRY(gpu::copy_to_device(values_io_, values.data(), keys.size() * view_.dim * 4));
  SPINDLE_TRY(gpu::cache_update_async(view_, static_cast<const cache_key*>(keys_in_), keys.size(),
                                      static_cast<const float*>(values_io_), nullptr));
  SPINDLE_TRY(gpu::synchronize(nullptr));
  return std::uint64_t(keys.size() - misses.keys.size());
}

void device_embedding_cache::dump(std::uint64_t set_begin, std::uint64_t set_end,
                                  std::vector<cache_key>& out) const {
  set_end = std::min(set_end, view_.num_sets);
  if (set_begin >= set_end) return;
  const std::uint64_t per_set = std::uint64_t{view_.slabs_per_set} * gpu::slab_width;
  std::vector<cache_key> keys((set_end - set_begin) * per_set);
  std::lock_guard lock(mu_);
  if (!gpu::set_device(gpu_)) return;
  if (!gpu::copy_to_host(keys.data(), view_.keys + set_begin * per_set, keys.size() * 8)) return;
  for (auto k : keys)
    if (k != gpu::empty_key) out.push_back(k);
}

status device_embedding_cache::replace_from_device(const cache_key* keys, std::size_t n,
                                                   const float* values) {
  if (n == 0) return status::ok();
  std::lock_guard lock(mu_);
  SPINDLE_TRY(gpu::set_device(gpu_));
  SPINDLE_TRY(gpu::cache_replace_async(view_, keys, n, values, ++counter_, nullptr));
  return gpu::synchronize(nullptr);
}

status device_embedding_cache::update_from_device(const cache_key* keys, std::size_t n,
                                                  const float* values) {
  if (n == 0) return status::ok();
  std::lock_guard lock(mu_);
  SPINDLE_TRY(gpu::set_device(gpu_));
  SPINDLE_TRY(gpu::cache_update_async(view_, keys, n, values, nullptr));
  return gpu::synchronize(nullptr);
}

expected<std::unique_ptr<l1_cache>> make_l1_cache(const cache_options& o, bool on_device) {
  if (on_device) {
    SPINDLE_ASSIGN_OR_RETURN(auto c, device_embedding_cache::create(o));
    return std::unique_ptr<l1_cache>(std::move(c));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto c, embedding_cache::create(o));
  return std::unique_ptr<l1_cache>(std::move(c));
}

}  // namespace spindle::hps
