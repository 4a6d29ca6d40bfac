#include "transport/net/file_wire.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/net/token_proof.hpp"

namespace spindle::transport::net::file_wire {
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

bool send_header(int fd, char kind, std::uint64_t length, clock_type::time_point deadline) {
  unsigned char h[9];
  h[0] = static_cast<unsigned char>(kind);
  for (int i = 0; i < 8; ++i) h[1 + i] = static_cast<unsigned char>(length >> (56 - 8 * i));
  return send_all(fd, h, sizeof h, deadline);
}

bool recv_header(int fd, char& kind, std::uint64_t& length, clock_type::time_point deadline) {
  unsigned char h[9];
  if (!recv_exact(fd, h, sizeof h, deadline)) return false;
  kind = static_cast<char>(h[0]);
  length = 0;
  for (int i = 0; i < 8; ++i) length = (length << 8) | h[1 + i];
  return true;
}

bool send_frame(int fd, char kind, const std::string& payload, clock_type::time_point deadline) {
  return send_header(fd, kind, payload.size(), deadline) &&
         send_all(fd, payload.data(), payload.size(), deadline);
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

std::string manifest_mac(const std::string& token, const std::string& gate_nonce,
                         const std::string& client_nonce, const std::string& text) {
  return proof::mac_of(token, "manifest", gate_nonce, client_nonce + text);
}

}  // namespace spindle::transport::net::file_wire
