#include "transport/net/handoff_listener.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "transport/net/door_gate.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/net/wake_fd.hpp"

namespace spindle::transport::net {
namespace {

// A connection handed over: the library's descriptor, the duplicate kept here
// and the socket's inode, which tells the library's descriptor from a reuse.
struct handed {
  int theirs = -1, dup = -1;
  ino_t inode = 0;
  std::string peer;
};

ino_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// Milliseconds since the peer last sent data (0 when unknown).
double idle_s(int fd) {
  tcp_info ti{};
  socklen_t len = sizeof ti;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return 0;
  return ti.tcpi_last_data_recv / 1000.0;
}

std::size_t default_max() {
  return std::min<std::size_t>(4096, std::max<std::size_t>(1, limits().descriptors / 2));
}

}  // namespace

struct handoff_listener::impl {
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  handoff_options o;
  std::function<void(int)> hand_over;
  door_gate gate;
  spare_descriptor spare;
  std::vector<handed> live;
  std::atomic<std::size_t> open_now{0};
  std::atomic<bool> stopping{false};
  std::thread thread;

  impl(int fd, handoff_options opts, std::function<void(int)> h)
      : listen_fd(fd),
        o(std::move(opts)),
        hand_over(std::move(h)),
        gate(o.name, o.max_connections ? o.max_connections : default_max(), 2) {}

  ~impl() {
    for (auto& h : live) ::close(h.dup);
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void drop(std::size_t i) {
    ::close(live[i].dup);
    gate.release(live[i].peer);
    live[i] = std::move(live.back());
    live.pop_back();
  }

  // Forgets every connection the library has closed (its descriptor gone or reused).
  void sweep() {
    for (std::size_t i = live.size(); i-- > 0;)
      if (inode_of(live[i].theirs) != live[i].inode) drop(i);
    open_now = live.size();
  }

  // Closes the connection idle longest (of `peer` when given), if idle long enough.
  bool evict(const std::string* peer) {
    std::size_t best = live.size();
    double best_idle = 0;
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (peer && live[i].peer != *peer) continue;
      const double idle = idle_s(live[i].dup);
      if (idle >= kEvictIdleSeconds && idle > best_idle) best = i, best_idle = idle;
    }
    if (best == live.size()) return false;
    ::shutdown(live[best].dup, SHUT_RDWR);  // the library reads the end and lets it go
    gate.evicted(best_idle);
    drop(best);
    return true;
  }

  admission admit(const std::string& peer) {
    auto a = gate.admit(peer);
    if (a == admission::admitted) return a;
    sweep();  // closed connections may not have been noticed yet
    a = gate.admit(peer);
    if (a == admission::admitted) return a;
    if (evict(a == admission::peer_full ? &peer : nullptr)) a = gate.admit(peer);
    return a;
  }

  void accept_all() {
    for (;;) {
      std::string peer;
      const int fd = accept_peer(listen_fd, peer);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          spare.shed_one(listen_fd);
          gate.refused(admission::process_full, "?");
          continue;
        }
        return;  // EAGAIN: nothing more pending
      }
      const auto a = admit(peer);
      const int dup = a == admission::admitted ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
      if (a != admission::admitted || dup < 0) {
        if (a == admission::admitted) gate.release(peer);
        gate.refused(a == admission::admitted ? admission::process_full : a, peer);
        ::close(fd);
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      live.push_back({fd, dup, inode_of(fd), peer});
      open_now = live.size();
      hand_over(fd);
    }
  }

  void loop() {
    epoll_event events[4];
    auto last_sweep = std::chrono::steady_clock::now();
    while (!stopping.load()) {
      const int n = ::epoll_wait(epoll_fd, events, 4, 500);
      for (int i = 0; i < n; ++i)
        if (events[i].data.fd == listen_fd) accept_all();
      if (std::chrono::steady_clock::now() - last_sweep > std::chrono::milliseconds(500)) {
        sweep();
        gate.tick();
        return_memory_after_flood();
        last_sweep = std::chrono::steady_clock::now();
      }
    }
  }
};

expected<std::unique_ptr<handoff_listener>> handoff_listener::start(
    int listen_fd, handoff_options o, std::function<void(int)> hand_over) {
  auto i = std::make_unique<impl>(listen_fd, std::move(o), std::move(hand_over));
  i->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  i->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (i->epoll_fd < 0 || i->wake_fd < 0)
    return make_error(errc::io_error, "{}: epoll/eventfd: {}", i->o.name, std::strerror(errno));
  for (int fd : {i->listen_fd, i->wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(i->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  impl* raw = i.get();
  i->thread = std::thread([raw] { raw->loop(); });
  pthread_setname_np(i->thread.native_handle(), (i->o.name.substr(0, 10) + "-accept").c_str());
  return std::unique_ptr<handoff_listener>(new handoff_listener(std::move(i)));
}

handoff_listener::handoff_listener(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

handoff_listener::~handoff_listener() {
  impl_->stopping = true;
  wake(impl_->wake_fd);
  impl_->thread.join();
}

std::size_t handoff_listener::open() const { return impl_->open_now.load(); }

}  // namespace spindle::transport::net
