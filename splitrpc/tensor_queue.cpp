#include "splitrpc/tensor_queue.hpp"

namespace spindle::splitrpc {

expected<std::unique_ptr<tensor_queue>> tensor_queue::create(std::size_t capacity_bytes) {
  SPINDLE_ASSIGN_OR_RETURN(auto ring,
                           double_mapped_ring::create(capacity_bytes, "spindle-tensor-queue"));
  return std::unique_ptr<tensor_queue>(new tensor_queue(std::move(ring)));
}

expected<tensor_queue::slot> tensor_queue::reserve(std::size_t bytes) {
  if (bytes == 0) return make_error(errc::invalid_argument, "tensor queue: empty payload");
  std::lock_guard lock(mu_);
  if (tail_ - head_ + bytes > ring_.capacity()) {
    return make_error(errc::resource_exhausted, "tensor queue: {} bytes wanted, {} of {} free",
                      bytes, ring_.capacity() - (tail_ - head_), ring_.capacity());
  }
  entries_.push_back({next_id_, tail_, bytes});
  slot s{next_id_++, ring_.at(tail_), bytes};
  tail_ += bytes;
  return s;
}

status tensor_queue::commit(std::uint64_t id) {
  std::lock_guard lock(mu_);
  if (entries_.empty() || id < entries_.front().id || id > entries_.back().id) {
    return make_error(errc::invalid_argument, "tensor queue: no reserved slot {}", id);
  }
  entry& e = entries_[id - entries_.front().id];  // ids are consecutive
  if (e.committed)
    return make_error(errc::invalid_argument, "tensor queue: slot {} committed twice", id);
  e.committed = true;
  return status::ok();
}

tensor_queue::batch tensor_queue::take(std::size_t max_requests, std::size_t max_bytes) {
  std::lock_guard lock(mu_);
  batch b;
  for (entry& e : entries_) {
    if (e.taken) continue;
    if (!e.committed || b.ids.size() >= max_requests ||
        (b.bytes > 0 && b.bytes + e.bytes > max_bytes))
      break;
    if (b.ids.empty()) b.data = ring_.at(e.offset);
    e.taken = true;
    b.ids.push_back(e.id);
    b.sizes.push_back(e.bytes);
    b.bytes += e.bytes;
  }
  return b;
}

status tensor_queue::release(const batch& b) {
  std::lock_guard lock(mu_);
  for (std::uint64_t id : b.ids) {
    if (entries_.empty() || entries_.front().id != id || !entries_.front().taken) {
      return make_error(errc::invalid_argument, "tensor queue: release of slot {} out of order",
                        id);
    }
    head_ += entries_.front().bytes;
    entries_.pop_front();
  }
  return status::ok();
}

std::size_t tensor_queue::used_bytes() const {
  std::lock_guard lock(mu_);
  return tail_ - head_;
}

}  // namespace spindle::splitrpc
