// Raw TCP connections to a server on 127.0.0.1, for tests that send bytes no
// client library would (hostile frames, idle sockets, half-closes) and read
// back whatever the server answers. Header-only; plain blocking sockets.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

namespace spindle::testing {

/// The port of "HOST:PORT" (what a server prints after "listening ").
inline int port_of(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

/// A close-on-exec socket connected to 127.0.0.1:`port`, or -1 when nothing accepts.
inline int dial_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

/// Makes a receive on `fd` give up after `seconds` without a byte (0: never).
inline void set_receive_timeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/// Everything `fd` receives until the peer closes it or `timeout_s` pass
/// without a byte (0: until closed); `fd` stays open.
inline std::string receive_all(int fd, int timeout_s) {
  set_receive_timeout(fd, timeout_s);
  std::string answer;
  char buf[4096];
  for (ssize_t k; (k = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, std::size_t(k));
  return answer;
}

}  // namespace spindle::testing
