#include "embedding/cache/replicated_cache.hpp"

#include <algorithm>

#include "gpu/gnn_kernels.hpp"

namespace spindle::embedding {

expected<std::unique_ptr<replicated_l1_cache>> replicated_l1_cache::create(const cache_options& o,
                                                                           int gpus) {
  std::unique_ptr<replicated_l1_cache> c(new replicated_l1_cache);
  SPINDLE_ASSIGN_OR_RETURN(c->nccl_, gpu::nccl_group::create(gpus));
  for (int g = 0; g < gpus; ++g) {
    SPINDLE_ASSIGN_OR_RETURN(auto r, device_embedding_cache::create(o, g));
    c->replicas_.push_back(std::move(r));
  }
  c->inboxes_.resize(std::size_t(gpus));
  return c;
}

replicated_l1_cache::~replicated_l1_cache() {
  for (std::size_t g = 0; g < inboxes_.size(); ++g) {
    (void)gpu::set_device(int(g));
    gpu::device_free(inboxes_[g].keys);
    gpu::device_free(inboxes_[g].values);
  }
}

status replicated_l1_cache::reserve(std::size_t keys) {
  for (std::size_t g = 0; g < inboxes_.size(); ++g) {
    auto& in = inboxes_[g];
    if (keys <= in.capacity) continue;
    SPINDLE_TRY(gpu::set_device(int(g)));
    gpu::device_free(in.keys);
    gpu::device_free(in.values);
    in = {};
    SPINDLE_ASSIGN_OR_RETURN(in.keys, gpu::device_alloc(2 * keys * sizeof(cache_key)));
    SPINDLE_ASSIGN_OR_RETURN(in.values, gpu::device_alloc(2 * keys * dim() * sizeof(float)));
    in.capacity = 2 * keys;
  }
  return status::ok();
}

status replicated_l1_cache::broadcast_apply(std::span<const cache_key> keys,
                                            std::span<const float> values, op what,
                                            std::size_t first) {
  if (keys.empty()) return status::ok();
  std::lock_guard lock(write_mu_);
  SPINDLE_TRY(reserve(keys.size()));
  const std::size_t value_bytes = keys.size() * dim() * sizeof(float);
  SPINDLE_TRY(gpu::set_device(0));
  SPINDLE_TRY(gpu::copy_to_device(inboxes_[0].keys, keys.data(), keys.size_bytes()));
  SPINDLE_TRY(gpu::copy_to_device(inboxes_[0].values, values.data(), value_bytes));
  std::vector<void*> key_bufs, value_bufs;
  for (auto& in : inboxes_) key_bufs.push_back(in.keys), value_bufs.push_back(in.values);
  SPINDLE_TRY(nccl_->broadcast(0, key_bufs, keys.size_bytes()));
  SPINDLE_TRY(nccl_->broadcast(0, value_bufs, value_bytes));
  for (std::size_t g = first; g < replicas_.size(); ++g) {
    const auto* k = static_cast<const cache_key*>(inboxes_[g].keys);
    const auto* v = static_cast<const float*>(inboxes_[g].values);
    SPINDLE_TRY(what == op::replace ? replicas_[g]->replace_from_device(k, keys.size(), v)
                                    : replicas_[g]->update_from_device(k, keys.size(), v));
  }
  return status::ok();
}

status replicated_l1_cache::query(std::span<const cache_key> keys, std::span<float> values,
                                  cache_misses& misses) {
  return replicas_[next_++ % replicas_.size()]->query(keys, values, misses);
}

status replicated_l1_cache::replace(std::span<const cache_key> keys,
                                    std::span<const float> values) {
  return broadcast_apply(keys, values, op::replace, 0);
}

expected<std::uint64_t> replicated_l1_cache::update(std::span<const cache_key> keys,
                                                    std::span<const float> values) {
  SPINDLE_ASSIGN_OR_RETURN(const std::uint64_t present, replicas_[0]->update(keys, values));
  SPINDLE_TRY(broadcast_apply(keys, values, op::update, 1));
  return present;
}

void replicated_l1_cache::dump(std::uint64_t set_begin, std::uint64_t set_end,
                               std::vector<cache_key>& out) const {
  const std::size_t from = out.size();
  for (const auto& r : replicas_) r->dump(set_begin, set_end, out);
  std::sort(out.begin() + std::ptrdiff_t(from), out.end());
  out.erase(std::unique(out.begin() + std::ptrdiff_t(from), out.end()), out.end());
}

expected<std::unique_ptr<l1_cache>> make_l1_cache(const cache_options& o, bool on_device,
                                                  int gpus) {
  if (!on_device || gpus <= 1) return make_l1_cache(o, on_device);
  SPINDLE_ASSIGN_OR_RETURN(auto c, replicated_l1_cache::create(o, gpus));
  return std::unique_ptr<l1_cache>(std::move(c));
}

}  // namespace spindle::embedding
