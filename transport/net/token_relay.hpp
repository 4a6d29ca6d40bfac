// Authenticated relays in front of a port another library serves without
// authentication (CAF 0.17's middleman, where one stranger's bytes could drop
// a rank's link to the cluster). The gate listens where peers connect: both
// ends prove they hold the cluster token (HMAC-SHA256 over nonces of both, a
// 5 s deadline), then bytes are relayed to the library's loopback port. The
// dialer is the other end: the library connects to it on loopback and it dials
// the remote gate. A connection that fails the handshake is closed alone.
#pragma once

#include <memory>
#include <string>

#include "core/status.hpp"

namespace spindle::transport::net {

struct relay_stats {
  std::uint64_t relayed = 0, refused = 0;  // connections authenticated / closed unauthenticated
};

class token_relay {
 public:
  /// Gate: listens on host:port (0: a free one) and relays authenticated
  /// connections to 127.0.0.1:`target_port`.
  static expected<std::unique_ptr<token_relay>> gate(const std::string& host, int port,
                                                     int target_port, std::string token,
                                                     std::string name);
  /// Dialer: listens on 127.0.0.1 (a free port) and relays each connection to
  /// the gate at remote_host:remote_port once both ends are authenticated.
  static expected<std::unique_ptr<token_relay>> dialer(const std::string& remote_host,
                                                       int remote_port, std::string token,
                                                       std::string name);
  /// Connects to the gate at host:port and runs the handshake once, to tell a
  /// gate that refuses `token` ("refused the cluster token") from one that
  /// cannot be reached (errc::unavailable either way, worded apart).
  static status prove(const std::string& host, int port, const std::string& token,
                      int timeout_ms = 5000);
  ~token_relay();  // stops and closes every connection it relays
  int port() const;
  relay_stats stats() const;

  struct impl;

 private:
  explicit token_relay(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace spindle::transport::net
