// Listening sockets for the doors and the addresses of their peers: one place
// that binds (host and port as given, port 0 for a free one), so every door
// holds its raw listening descriptor and can shed a pending connection itself.
#pragma once

#include <sys/socket.h>

#include <string>

#include "core/status.hpp"

namespace spindle::transport::net {

/// A non-blocking, close-on-exec socket listening on host:port; `what` names
/// the flag in errors ("--grpc").
expected<int> listen_socket(const std::string& host, int port, const std::string& what,
                            int backlog = 1024);
/// The port a socket is bound to.
int local_port(int fd);
/// A peer's address without its port ("127.0.0.2", "::1").
std::string address_of(const sockaddr* sa, socklen_t len);
/// Accepts one pending connection (non-blocking, close-on-exec) and sets `peer`
/// to its address; -1, with errno set, when none was taken.
int accept_peer(int listen_fd, std::string& peer);

}  // namespace spindle::transport::net
