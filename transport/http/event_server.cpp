#include "transport/http/event_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/log.hpp"
#include "transport/http/event_server_impl.hpp"
#include "transport/http/http_wire.hpp"
#include "transport/net/wake_fd.hpp"

namespace spindle::transport::http {

using detail::clock_type;
using detail::connection;
using detail::phase;
using detail::remote_port_of;

void event_server::impl::watch(int fd, std::uint32_t events, int op) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd, op, fd, &ev);
}

void event_server::impl::close_conn(connection& c) {
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  gate->release(c.addr);
  conns.erase(c.fd);  // `c` is gone from here on
}

void event_server::impl::run_job(job& j) {
  set_call_origin(fmt::format("{} {}:{}", o.name == "kserve-http" ? "http" : o.name,
                              j.req.remote_addr, j.req.remote_port));
  const httplib::Response res = routes.answer(j.req, o.name, error_body);
  {
    std::lock_guard lock(done_mu);
    done.push_back({j.fd, j.gen, serialize_response(res, j.keep_alive), !j.keep_alive});
  }
  net::wake(wake_fd);
}

void event_server::impl::worker_loop() {
  for (;;) {
    std::unique_lock lock(work_mu);
    work_cv.wait(lock, [&] { return stopping.load() || !work.empty(); });
    if (work.empty()) return;
    job j = std::move(work.front());
    work.pop_front();
    lock.unlock();
    run_job(j);
  }
}

// Full: closes the connection whose client has sent nothing longest (of
// `peer` when given), if no request of it is being answered and it has been
// silent at least net::kEvictIdleSeconds.
bool event_server::impl::evict(const std::string* peer) {
  const auto now = clock_type::now();
  connection* best = nullptr;
  for (auto& [fd, c] : conns) {
    if ((c.at != phase::head && c.at != phase::body) || (peer && c.addr != *peer)) continue;
    if (!best || c.last_byte < best->last_byte) best = &c;
  }
  if (!best) return false;
  const double idle = std::chrono::duration<double>(now - best->last_byte).count();
  if (idle < net::kEvictIdleSeconds) return false;
  gate->evicted(idle);
  close_conn(*best);
  return true;
}

net::admission event_server::impl::admit(const std::string& peer) {
  auto a = gate->admit(peer);
  if (a != net::admission::admitted &&
      evict(a == net::admission::peer_full ? &peer : nullptr))
    a = gate->admit(peer);
  return a;
}

void event_server::impl::accept_all() {
  for (;;) {
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
      spare.shed_one(listen_fd);  // the client sees the end, not a silent backlog
      gate->refused(net::admission::process_full, "?");
      continue;
    }
    if (fd < 0) return;  // EAGAIN: nothing more pending
    const std::string peer = net::address_of(reinterpret_cast<sockaddr*>(&sa), len);
    if (const auto a = admit(peer); a != net::admission::admitted) {
      ::close(fd);
      gate->refused(a, peer);
      std::lock_guard lock(stats_mu);
      ++stats.refused;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto& c = conns[fd];
    c.fd = fd;
    c.gen = next_gen++;
    c.addr = peer;
    c.remote_port = remote_port_of(sa);
    c.last_byte = clock_type::now();
    c.deadline = c.last_byte + o.idle_timeout;
    watch(fd, EPOLLIN, EPOLL_CTL_ADD);
    std::lock_guard lock(stats_mu);
    ++stats.accepted;
  }
}

void event_server::impl::take_completions() {
  std::uint64_t n;
  [[maybe_unused]] auto r = ::read(wake_fd, &n, sizeof n);
  std::vector<completion> ready;
  {
    std::lock_guard lock(done_mu);
    ready.swap(done);
  }
  for (auto& x : ready) {
    auto it = conns.find(x.fd);
    if (it == conns.end() || it->second.gen != x.gen) continue;  // closed meanwhile
    auto& c = it->second;
    if (c.close_after && c.at == phase::writing) {  // the client left during the handler
      close_conn(c);
      continue;
    }
    respond(c, std::move(x.bytes), x.close_after);
  }
}

// Deadlines: an unfinished request gets 408, an idle connection is closed,
// a response nobody reads is dropped.
void event_server::impl::expire() {
  const auto now = clock_type::now();
  std::vector<int> late;
  for (auto& [fd, c] : conns)
    if (now > c.deadline) late.push_back(fd);
  std::uint64_t timed_out = 0, dropped = 0;
  for (int fd : late) {
    auto& c = conns.at(fd);
    if (c.at == phase::draining) {
      close_conn(c);
    } else if (c.at == phase::writing) {
      ++dropped;
      close_conn(c);
    } else if (c.in.empty() && c.at == phase::head) {
      close_conn(c);  // idle: nothing was asked
    } else {
      ++timed_out;
      refuse(c, 408, "request not complete in time");
    }
  }
  std::lock_guard lock(stats_mu);
  stats.timed_out += timed_out;
  stats.write_dropped += dropped;
  gate->tick();  // refusals and evictions, at most once per 10 s
  if (now - last_report > std::chrono::seconds(10) && stats.timed_out > reported_timeouts) {
    log::warn("{}: {} requests not complete in time (408) in the last {:.0f} s", o.name,
              stats.timed_out - reported_timeouts,
              std::chrono::duration<double>(now - last_report).count());
    reported_timeouts = stats.timed_out;
    last_report = now;
  }
}

void event_server::impl::io_loop() {
  epoll_event events[256];
  while (!stopping.load()) {
    const int n = ::epoll_wait(epoll_fd, events, 256, 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd) {
        accept_all();
      } else if (fd == wake_fd) {
        take_completions();
      } else if (auto it = conns.find(fd); it != conns.end()) {
        auto& c = it->second;
        if (events[i].events & EPOLLOUT && c.at == phase::writing) {
          flush(c);
        } else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
          on_readable(c);
        }
      }
    }
    expire();
    net::return_memory_after_flood();
  }
}

expected<std::unique_ptr<event_server>> event_server::bind(const event_server_options& o) {
  auto i = std::make_unique<impl>();
  i->o = o;
  if (i->o.max_connections == 0) i->o.max_connections = net::default_max_connections();
  i->gate = std::make_unique<net::door_gate>(o.name, i->o.max_connections);
  SPINDLE_ASSIGN_OR_RETURN(i->listen_fd, net::listen_socket(o.host, o.port, o.name));
  i->port = net::local_port(i->listen_fd);
  i->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  i->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (i->epoll_fd < 0 || i->wake_fd < 0)
    return make_error(errc::io_error, "{}: epoll/eventfd: {}", o.name, std::strerror(errno));
  i->watch(i->listen_fd, EPOLLIN, EPOLL_CTL_ADD);
  i->watch(i->wake_fd, EPOLLIN, EPOLL_CTL_ADD);
  return std::unique_ptr<event_server>(new event_server(std::move(i)));
}

event_server::event_server(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

event_server::~event_server() {
  impl_->stopping = true;
  impl_->work_cv.notify_all();
  if (impl_->io.joinable()) impl_->io.join();
  for (auto& t : impl_->workers) t.join();
  for (auto& [fd, c] : impl_->conns) ::close(fd);
}

namespace {
handler with_args(simple_handler h) {
  return [h = std::move(h)](const httplib::Request& q, const path_args&, httplib::Response& r) {
    h(q, r);
  };
}
}  // namespace

void event_server::get(const std::string& pattern, handler h) {
  impl_->routes.add("GET", pattern, std::move(h));
}

void event_server::post(const std::string& pattern, handler h) {
  impl_->routes.add("POST", pattern, std::move(h));
}

void event_server::get(const std::string& pattern, simple_handler h) {
  get(pattern, with_args(std::move(h)));
}

void event_server::post(const std::string& pattern, simple_handler h) {
  post(pattern, with_args(std::move(h)));
}

void event_server::on_error(
    std::function<void(int status, const std::string& why, httplib::Response&)> f) {
  impl_->error_body = std::move(f);
}

void event_server::start() {
  impl* raw = impl_.get();
  raw->io = std::thread([raw] { raw->io_loop(); });
  pthread_setname_np(raw->io.native_handle(), raw->o.name.substr(0, 15).c_str());
  for (std::size_t k = 0; k < std::max<std::size_t>(1, raw->o.workers); ++k) {
    raw->workers.emplace_back([raw] { raw->worker_loop(); });
    pthread_setname_np(raw->workers.back().native_handle(),
                       (raw->o.name.substr(0, 11) + "-w").c_str());
  }
}

int event_server::port() const { return impl_->port; }

event_server::counters event_server::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->stats;
}

}  // namespace spindle::transport::http
