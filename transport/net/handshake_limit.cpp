#include "transport/net/handshake_limit.hpp"

#include <algorithm>

namespace spindle::transport::net {

handshake_limit::handshake_limit(std::size_t total, std::size_t per_peer)
    : total_(std::max<std::size_t>(total, 1)), per_peer_(std::max<std::size_t>(per_peer, 1)) {}

std::optional<handshake_limit::eviction> handshake_limit::admit(std::uint64_t id,
                                                                const std::string& peer) {
  std::optional<eviction> out;
  if (waiting_from(peer) >= per_peer_) {
    for (const auto& [old, from] : by_id_)
      if (from == peer) {
        out = eviction{old, true};
        break;
      }
  } else if (by_id_.size() >= total_) {
    out = eviction{by_id_.begin()->first, false};
  }
  if (out) forget(out->id);
  by_id_.emplace(id, peer);
  ++per_address_[peer];
  return out;
}

bool handshake_limit::forget(std::uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  auto n = per_address_.find(it->second);
  if (n != per_address_.end() && --n->second == 0) per_address_.erase(n);
  by_id_.erase(it);
  return true;
}

std::size_t handshake_limit::waiting_from(const std::string& peer) const {
  auto it = per_address_.find(peer);
  return it == per_address_.end() ? 0 : it->second;
}

}  // namespace spindle::transport::net
