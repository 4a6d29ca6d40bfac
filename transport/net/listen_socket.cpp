#include "transport/net/listen_socket.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spindle::transport::net {

expected<int> listen_socket(const std::string& host, int port, const std::string& what,
                            int backlog) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return make_error(errc::invalid_argument, "{} {}:{}: {}", what, host, port, ::gai_strerror(rc));
  int listen_fd = -1, last_errno = 0;
  for (auto* r = res; r && listen_fd < 0; r = r->ai_next) {
    const int fd = ::socket(r->ai_family, r->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, r->ai_addr, r->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      listen_fd = fd;
    } else {
      last_errno = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(res);
  if (listen_fd < 0)
    return make_error(errc::unavailable, "{} {}:{}: cannot bind: {}", what, host, port,
                      std::strerror(last_errno));
  return listen_fd;
}

int local_port(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  return ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
}

std::string address_of(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST] = "";
  if (::getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

int accept_peer(int listen_fd, std::string& peer) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) peer = address_of(reinterpret_cast<sockaddr*>(&sa), len);
  return fd;
}

}  // namespace spindle::transport::net
