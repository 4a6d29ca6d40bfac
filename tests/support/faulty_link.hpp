// A TCP relay on 127.0.0.1 in front of a real server that misbehaves on
// purpose, as a network can: it cuts a connection after some bytes from the
// server, flips one of those bytes, or closes new connections at once. Tests
// of resuming and of checksums put it between a client and a real server.
// Header-only; its thread serves one connection at a time.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/support/loopback_socket.hpp"
#include "transport/net/listen_socket.hpp"

namespace spindle::testing {

/// What the relay does to one connection (the n-th it accepts, from 0).
struct link_fault {
  std::uint64_t cut_after = 0;  // close after this many bytes from the server (0: never)
  std::int64_t flip_at = -1;    // XOR byte at this offset from the server with 0x5a (-1: none)
  bool refuse = false;          // close at once
};

class faulty_link {
 public:
  /// Relays to 127.0.0.1:`target`; connection n gets faults[n] (later ones: none).
  faulty_link(int target, std::vector<link_fault> faults) : target_(target), faults_(faults) {
    fd_ = *transport::net::listen_socket("127.0.0.1", 0, "faulty link");
    port_ = transport::net::local_port(fd_);
    thread_ = std::thread([this] { loop(); });
  }
  ~faulty_link() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) != 1) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      const std::size_t n = std::size_t(accepted_++);
      const link_fault f = n < faults_.size() ? faults_[n] : link_fault{};
      if (!f.refuse) relay(c, f);
      ::close(c);
    }
  }

  void relay(int c, const link_fault& f) {
    const int s = dial_loopback(target_);
    if (s < 0) return;
    std::uint64_t down = 0;  // bytes from the server so far
    char buf[65536];
    while (!stop_) {
      pollfd p[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
      if (::poll(p, 2, 100) <= 0) continue;
      if (p[0].revents) {
        const ssize_t k = ::recv(c, buf, sizeof buf, 0);
        if (k <= 0 || ::send(s, buf, std::size_t(k), MSG_NOSIGNAL) != k) break;
      }
      if (p[1].revents) {
        ssize_t k = ::recv(s, buf, sizeof buf, 0);
        if (k <= 0) break;
        if (f.cut_after && down + std::uint64_t(k) > f.cut_after) k = ssize_t(f.cut_after - down);
        if (f.flip_at >= 0 && std::uint64_t(f.flip_at) >= down &&
            std::uint64_t(f.flip_at) < down + std::uint64_t(k))
          buf[std::uint64_t(f.flip_at) - down] ^= 0x5a;
        if (k > 0 && ::send(c, buf, std::size_t(k), MSG_NOSIGNAL) != k) break;
        down += std::uint64_t(k);
        if (f.cut_after && down >= f.cut_after) break;
      }
    }
    ::close(s);
  }

  int target_, fd_ = -1, port_ = 0;
  std::vector<link_fault> faults_;
  std::atomic<int> accepted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace spindle::testing
