// Room for connections yet to prove the cluster token (the token relay's gate,
// the file door): a cap per address and in all, past which the oldest unproven
// connection (that address's own first) is closed to make room.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace spindle::transport::net {

/// So strangers cannot hold a door shut against a peer whose proof takes one
/// round trip. Not thread-safe (the caller's lock or thread).
class handshake_limit {
 public:
  handshake_limit(std::size_t total, std::size_t per_peer);

  /// The connection to close to make room, and which cap it was closed for.
  struct eviction {
    std::uint64_t id = 0;
    bool per_peer = false;  // this address's cap; else the total one
  };
  /// Counts connection `id` (ids grow with time) from `peer` as unproven; the
  /// one to close first when a cap is reached, which is no longer counted.
  std::optional<eviction> admit(std::uint64_t id, const std::string& peer);
  /// Stops counting `id` (it proved the token, or it closed); true when it was
  /// counted, false when it never was or was evicted.
  bool forget(std::uint64_t id);

  std::size_t waiting() const { return by_id_.size(); }
  std::size_t waiting_from(const std::string& peer) const;
  std::size_t total_cap() const { return total_; }
  std::size_t per_peer_cap() const { return per_peer_; }

 private:
  std::size_t total_, per_peer_;
  std::map<std::uint64_t, std::string> by_id_;  // oldest first
  std::unordered_map<std::string, std::size_t> per_address_;
};

}  // namespace spindle::transport::net
