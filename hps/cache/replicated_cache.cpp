#include "hps/cache/replicated_cache.hpp"

#include <algorithm>

#include "gpu/gnn_kernels.hpp"

namespace spindle::hps {

expected<std::unique_ptr<replicated_l1_cache>> replicated_l1_cache::create(const cache_options& o,
                                                                           int gpus) {
  std::unique_ptr<replicated_l1_cache> c(new replicated_l1_cache);
  SPINDLE_ASSIGN_OR_RETURN(c->nccl_, gpu::nccl_group::create(gpus));
  for (int g = 0; g < gpus; ++g) {
    SPINDLE_ASSIGN_OR_RETURN(auto r, device_embedding_cache::create(o, g));
    c->replicas_.push_back(std::move(r));
  }
  for (int g = 0; g < gpus; ++g)
    c->inboxes_.push_back({gpu::device_buffer(g), gpu::device_buffer(g)});
  return c;
}

status replicated_l1_cache::broadcast_apply(std::span<const cache_key> keys,
                                            std::span<const float> values, op what,
                                            std::size_t first) {
  if (keys.empty()) return status::ok();
  std::lock_guard lock(write_mu_);
  const std::size_t value_bytes = keys.size() * dim() * sizeof(float);
  std::vector<void*> key_bufs, value_bufs;
  for (auto& in : inboxes_) {
    SPINDLE_ASSIGN_OR_RETURN(void* k, in.keys.reserve(keys.size_bytes()));
    SPINDLE_ASSIGN_OR_RETURN(void* v, in.values.reserve(value_bytes));
    key_bufs.push_back(k), value_bufs.push_back(v);
  }
  SPINDLE_TRY(gpu::set_device(0));
  SPINDLE_TRY(gpu::copy_to_device(key_bufs[0], keys.data(), keys.size_bytes()));
  SPINDLE_TRY(gpu::copy_to_device(value_bufs[0], values.data(), value_bytes));
  SPINDLE_TRY(nccl_->broadcast(0, key_bufs, keys.size_bytes()));
  SPINDLE_TRY(nccl_->broadcast(0, value_bufs, value_bytes));
  for (std::size_t g = first; g < replicas_.size(); ++g) {
    const auto* k = static_cast<const cache_key*>(key_bufs[g]);
    const auto* v = static_cast<const float*>(value_bufs[g]);
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

}  // namespace spindle::hps
