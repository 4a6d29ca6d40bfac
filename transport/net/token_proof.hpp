// The cluster relays' handshake, fixed sizes: the gate sends kMagic and its
// nonce; the dialer answers its own nonce and HMAC-SHA256(token, "client" |
// gate nonce | dialer nonce); the gate answers HMAC(token, "server" | ...).
// Each end thus proves the token without sending it, and a replay fails on
// the other end's fresh nonce.
#pragma once

#include <cstddef>
#include <string>

namespace spindle::transport::net::proof {

inline constexpr char kMagic[8] = {'S', 'P', 'N', 'D', 'L', 'R', 'L', '1'};
inline constexpr std::size_t kNonce = 32, kMac = 32;
inline constexpr std::size_t kHello = sizeof kMagic + kNonce, kProof = kNonce + kMac;

/// HMAC-SHA256(token, role | gate_nonce | dialer_nonce); role "client" or "server".
std::string mac_of(const std::string& token, const char* role, const std::string& gate_nonce,
                   const std::string& dialer_nonce);
/// Equality in constant time (for MACs).
bool same(const std::string& a, const std::string& b);
/// kNonce random bytes.
std::string nonce();

}  // namespace spindle::transport::net::proof
