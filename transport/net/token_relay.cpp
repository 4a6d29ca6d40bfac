#include "transport/net/token_relay.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/log.hpp"
#include "transport/net/handshake_limit.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/net/local_peer.hpp"
#include "transport/net/socket_io.hpp"
#include "transport/net/token_proof.hpp"
#include "transport/net/wake_fd.hpp"

namespace spindle::transport::net {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace proof;

constexpr auto kHandshakeDeadline = std::chrono::seconds(5);
constexpr std::size_t kMaxBuffered = 256 << 10;    // per direction; then reading pauses
constexpr std::size_t kMaxHandshakes = 256;        // connections not yet authenticated
constexpr std::size_t kMaxHandshakesPerPeer = 16;  // of them from one address

// A non-blocking connection to host:port begun (EINPROGRESS is fine); -1 if not.
int dial(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (auto* r = res; r && fd < 0; r = r->ai_next) {
    fd = ::socket(r->ai_family, r->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, r->ai_addr, r->ai_addrlen) != 0 && errno != EINPROGRESS) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

// One relayed connection: side 0 was accepted, side 1 dialed. in[i] holds what
// side i sent that is not yet written to the other side.
enum class stage { hello, proof, answer, relay };
struct link {
  int fd[2] = {-1, -1};
  std::string peer;  // side 0's address
  std::string in[2];
  stage at = stage::hello;
  std::string gate_nonce, dialer_nonce;
  clock_type::time_point deadline;
  bool dialed = false;  // side 1 connected
};

}  // namespace

struct token_relay::impl {
  bool is_gate = false;
  std::string name, token, remote_host;
  int remote_port = 0;  // gate: the library's loopback port; dialer: the remote gate
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, port = 0;
  std::unordered_map<std::uint64_t, link> links;
  std::uint64_t next_id = 1;
  handshake_limit unproven{kMaxHandshakes, kMaxHandshakesPerPeer};  // links before stage::relay
  std::atomic<bool> stopping{false};
  mutable std::mutex stats_mu;
  relay_stats stats;
  std::uint64_t refused_unlogged = 0;
  clock_type::time_point last_log{};
  std::thread thread;

  ~impl() {
    for (auto& [id, l] : links)
      for (int fd : l.fd)
        if (fd >= 0) ::close(fd);
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void watch(std::uint64_t id, int side, std::uint32_t events, int op) {
    auto& l = links.at(id);
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id * 2 + std::uint64_t(side);
    ::epoll_ctl(epoll_fd, op, l.fd[side], &ev);
  }

  // `evicted`: closed to make room, logged even when it had sent nothing.
  void close_link(std::uint64_t id, const char* why, bool evicted = false) {
    auto it = links.find(id);
    if (it == links.end()) return;
    // A connection that sent nothing (a port probe, a member checking the port
    // listens) is not counted as a failed proof.
    const bool silent = it->second.at == stage::proof && it->second.in[0].empty();
    if (it->second.at != stage::relay && (!silent || evicted)) {
      std::lock_guard lock(stats_mu);
      ++stats.refused;
      ++refused_unlogged;
      if (clock_type::now() - last_log > std::chrono::seconds(10)) {
        log::warn("{}: closed {} connection(s) that did not prove the cluster token (last: {})",
                  name, refused_unlogged, why);
        refused_unlogged = 0;
        last_log = clock_type::now();
      }
    }
    for (int fd : it->second.fd)
      if (fd >= 0) {
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
      }
    unproven.forget(id);
    links.erase(it);
  }

  // Reads what is there into l.in[side]; false on EOF or error.
  bool fill(link& l, int side) {
    char buf[65536];
    for (;;) {
      if (l.in[side].size() >= kMaxBuffered) return true;
      const ssize_t n = ::recv(l.fd[side], buf, sizeof buf, 0);
      if (n > 0) {
        l.in[side].append(buf, std::size_t(n));
        continue;
      }
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }

  // Writes l.in[from] to the other side; false on error.
  bool drain(link& l, int from) {
    auto& b = l.in[from];
    while (!b.empty()) {
      const ssize_t n = ::send(l.fd[1 - from], b.data(), b.size(), MSG_NOSIGNAL);
      if (n > 0) {
        b.erase(0, std::size_t(n));
        continue;
      }
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return true;
  }

  // Handshake writes are a few dozen bytes on a fresh socket: written whole.
  static bool send_all(int fd, const std::string& bytes) {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }

  void rewatch(std::uint64_t id) {
    auto& l = links.at(id);
    for (int side : {0, 1}) {
      if (l.fd[side] < 0) continue;
      std::uint32_t ev = 0;
      if (l.at == stage::relay) {
        if (l.in[side].size() < kMaxBuffered) ev |= EPOLLIN;
        if (!l.in[1 - side].empty()) ev |= EPOLLOUT;
      } else {
        // Handshake: the authenticated side reads; the library's side waits.
        const int hs_side = is_gate ? 0 : 1;
        if (side == hs_side) ev |= EPOLLIN;
        if (side == 1 && !l.dialed) ev |= EPOLLOUT;
      }
      watch(id, side, ev, EPOLL_CTL_MOD);
    }
  }

  // Room for new unproven connection `id` from `peer` (handshake_limit): past
  // the per-address cap that address's oldest unproven connection is closed,
  // past the total cap the oldest of all (a member's handshake takes a round
  // trip; a flood of unproven connections cannot hold the gate shut).
  void make_room(std::uint64_t id, const std::string& peer) {
    if (auto v = unproven.admit(id, peer))
      close_link(v->id,
                 v->per_peer ? "closed to make room: 16 unproven from one address"
                             : "closed to make room: 256 unproven in all",
                 true);
  }

  void accept_all() {
    for (;;) {
      std::string peer;
      const int fd = accept_peer(listen_fd, peer);
      if (fd < 0) return;
      const std::uint64_t id = next_id++;
      make_room(id, peer);
      if (!is_gate && !from_this_process(fd)) {  // another local process on the dialer
        unproven.forget(id);
        ::close(fd);
        std::lock_guard lock(stats_mu);
        ++stats.refused;
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto& l = links[id];
      l.fd[0] = fd;
      l.peer = peer;
      l.deadline = clock_type::now() + kHandshakeDeadline;
      epoll_event ev{};
      ev.data.u64 = id * 2;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
      if (is_gate) {
        l.gate_nonce = nonce();
        if (!send_all(fd, std::string(kMagic, sizeof kMagic) + l.gate_nonce)) {
          close_link(id, "could not send the challenge");
          continue;
        }
        l.at = stage::proof;
      } else {
        l.fd[1] = dial(remote_host, remote_port);
        if (l.fd[1] < 0) {
          close_link(id, "cannot reach the gate");
          continue;
        }
        ev.data.u64 = id * 2 + 1;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, l.fd[1], &ev);
        l.at = stage::hello;
      }
      rewatch(id);
    }
  }

  // The handshake's next step on `side` of link `id`; false closes the link.
  bool handshake(std::uint64_t id, link& l, int side, std::uint32_t events) {
    if (side == 1 && !l.dialed && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(l.fd[1], SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) return false;
      l.dialed = true;
      if (is_gate) {  // the library's port took the connection: answer the dialer
        if (!send_all(l.fd[0], mac_of(token, "server", l.gate_nonce, l.dialer_nonce))) return false;
        l.at = stage::relay;
        unproven.forget(id);
        std::lock_guard lock(stats_mu);
        ++stats.relayed;
      }
      return true;
    }
    const int hs_side = is_gate ? 0 : 1;
    if (side != hs_side) return !(events & (EPOLLHUP | EPOLLERR));  // the waiting side left
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return true;
    if (!fill(l, side)) return false;
    auto& b = l.in[side];
    if (is_gate) {  // stage::proof: the dialer's nonce and proof
      if (l.at != stage::proof || b.size() < kProof) return true;
      l.dialer_nonce = b.substr(0, kNonce);
      if (!same(b.substr(kNonce, kMac), mac_of(token, "client", l.gate_nonce, l.dialer_nonce)))
        return false;
      b.erase(0, kProof);
      l.at = stage::answer;
      l.fd[1] = dial("127.0.0.1", remote_port);
      if (l.fd[1] < 0) return false;
      epoll_event ev{};
      ev.data.u64 = id * 2 + 1;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, l.fd[1], &ev);
      return true;
    }
    if (l.at == stage::hello) {  // the gate's challenge
      if (b.size() < kHello) return true;
      if (std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) return false;
      l.gate_nonce = b.substr(sizeof kMagic, kNonce);
      b.erase(0, kHello);
      l.dialer_nonce = nonce();
      if (!send_all(l.fd[1],
                    l.dialer_nonce + mac_of(token, "client", l.gate_nonce, l.dialer_nonce)))
        return false;
      l.at = stage::answer;
    }
    if (l.at == stage::answer && b.size() >= kMac) {  // the gate's proof
      if (!same(b.substr(0, kMac), mac_of(token, "server", l.gate_nonce, l.dialer_nonce)))
        return false;
      b.erase(0, kMac);
      l.at = stage::relay;
      unproven.forget(id);
      std::lock_guard lock(stats_mu);
      ++stats.relayed;
    }
    return true;
  }

  void on_event(std::uint64_t tag, std::uint32_t events) {
    const std::uint64_t id = tag / 2;
    const int side = int(tag % 2);
    auto it = links.find(id);
    if (it == links.end()) return;
    auto& l = it->second;
    if (l.at != stage::relay) {
      if (!handshake(id, l, side, events)) return close_link(id, "a wrong or missing proof");
      if (l.at != stage::relay) return rewatch(id);
    }
    // Relay: read what each side sent, write what the other side takes.
    for (int s : {0, 1}) {
      const bool open = fill(l, s);
      if (!drain(l, s) || !open) return close_link(id, "closed");
    }
    rewatch(id);
  }

  void expire() {
    const auto now = clock_type::now();
    std::vector<std::uint64_t> late;
    for (auto& [id, l] : links)
      if (l.at != stage::relay && now > l.deadline) late.push_back(id);
    for (auto id : late) close_link(id, "no proof within 5 s");
  }

  void loop() {
    epoll_event events[64];
    while (!stopping.load()) {
      const int n = ::epoll_wait(epoll_fd, events, 64, 500);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == ~0ull) {
          accept_all();
        } else if (events[i].data.u64 != ~1ull) {
          on_event(events[i].data.u64, events[i].events);
        }
      }
      expire();
    }
  }
};

namespace {

expected<std::unique_ptr<token_relay::impl>> start_impl(std::unique_ptr<token_relay::impl> i,
                                                        const std::string& host, int port) {
  if (i->token.empty()) return make_error(errc::invalid_argument, "{}: no cluster token", i->name);
  SPINDLE_ASSIGN_OR_RETURN(i->listen_fd, listen_socket(host, port, i->name, 128));
  i->port = local_port(i->listen_fd);
  i->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  i->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (i->epoll_fd < 0 || i->wake_fd < 0)
    return make_error(errc::io_error, "{}: epoll/eventfd: {}", i->name, std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = ~0ull;
  ::epoll_ctl(i->epoll_fd, EPOLL_CTL_ADD, i->listen_fd, &ev);
  ev.data.u64 = ~1ull;
  ::epoll_ctl(i->epoll_fd, EPOLL_CTL_ADD, i->wake_fd, &ev);
  auto* raw = i.get();
  i->thread = std::thread([raw] { raw->loop(); });
  pthread_setname_np(i->thread.native_handle(), i->name.substr(0, 15).c_str());
  return i;
}

}  // namespace

expected<std::unique_ptr<token_relay>> token_relay::gate(const std::string& host, int port,
                                                         int target_port, std::string token,
                                                         std::string name) {
  auto i = std::make_unique<impl>();
  i->is_gate = true;
  i->name = std::move(name);
  i->token = std::move(token);
  i->remote_port = target_port;
  SPINDLE_ASSIGN_OR_RETURN(i, start_impl(std::move(i), host, port));
  return std::unique_ptr<token_relay>(new token_relay(std::move(i)));
}

expected<std::unique_ptr<token_relay>> token_relay::dialer(const std::string& remote_host,
                                                           int remote_port, std::string token,
                                                           std::string name) {
  auto i = std::make_unique<impl>();
  i->name = std::move(name);
  i->token = std::move(token);
  i->remote_host = remote_host;
  i->remote_port = remote_port;
  SPINDLE_ASSIGN_OR_RETURN(i, start_impl(std::move(i), "127.0.0.1", 0));
  return std::unique_ptr<token_relay>(new token_relay(std::move(i)));
}

status token_relay::prove(const std::string& host, int port, const std::string& token,
                          int timeout_ms) {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  SPINDLE_ASSIGN_OR_RETURN(const int fd, socket_io::connect_to(host, port, timeout_ms));
  std::string hello(kHello, '\0'), answer(kMac, '\0');
  status result;
  if (!socket_io::recv_exact(fd, hello.data(), kHello, deadline)) {
    result = make_error(errc::unavailable,
                        "{}:{} sent no challenge (the gate is busy, or this is not a cluster port)",
                        host, port);
  } else if (std::memcmp(hello.data(), kMagic, sizeof kMagic) != 0) {
    result = make_error(errc::unavailable, "{}:{} is not a Spindle cluster port", host, port);
  } else {
    const std::string gate_nonce = hello.substr(sizeof kMagic), mine = nonce();
    const std::string proof = mine + mac_of(token, "client", gate_nonce, mine);
    if (!socket_io::send_all(fd, proof.data(), proof.size(), deadline) ||
        !socket_io::recv_exact(fd, answer.data(), kMac, deadline))
      result = make_error(errc::unavailable, "{}:{} refused the cluster token", host, port);
    else if (!same(answer, mac_of(token, "server", gate_nonce, mine)))
      result =
          make_error(errc::unavailable,
                     "{}:{} does not hold this cluster's token (a different cluster?)", host, port);
  }
  ::close(fd);
  return result;
}

token_relay::token_relay(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

token_relay::~token_relay() {
  impl_->stopping = true;
  wake(impl_->wake_fd);
  impl_->thread.join();
}

int token_relay::port() const { return impl_->port; }

relay_stats token_relay::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->stats;
}

}  // namespace spindle::transport::net
