#include "transport/net/socket_io.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace spindle::transport::net::socket_io {
namespace {

int millis_left(clock_type::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1 << 30));
}

bool wait_for(int fd, short events, clock_type::time_point deadline) {
  for (;;) {
    const int ms = millis_left(deadline);
    if (ms == 0) return false;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, ms);
    if (rc < 0 && errno == EINTR) continue;
    return rc == 1;
  }
}

}  // namespace

bool send_all(int fd, const void* data, std::size_t n, clock_type::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (!wait_for(fd, POLLOUT, deadline)) return false;
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (k <= 0) return false;
    p += k;
    n -= std::size_t(k);
  }
  return true;
}

bool recv_exact(int fd, void* out, std::size_t n, clock_type::time_point deadline) {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    if (!wait_for(fd, POLLIN, deadline)) return false;
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (k <= 0) return false;
    p += k;
    n -= std::size_t(k);
  }
  return true;
}

expected<int> connect_to(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return make_error(errc::unavailable, "{}:{}: {}", host, port, ::gai_strerror(rc));
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  std::string why = "no address";
  int fd = -1;
  for (auto* r = res; r && fd < 0; r = r->ai_next) {
    fd = ::socket(r->ai_family, r->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int err = 0;
    socklen_t len = sizeof err;
    if (::connect(fd, r->ai_addr, r->ai_addrlen) != 0 && errno != EINPROGRESS)
      err = errno;
    else if (!wait_for(fd, POLLOUT, deadline))
      err = ETIMEDOUT;
    else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      err = errno;
    if (err) {
      why = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) return make_error(errc::unavailable, "{}:{}: cannot connect: {}", host, port, why);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace spindle::transport::net::socket_io
