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

#include "core/call_origin.hpp"
#include "core/log.hpp"
#include "transport/http/http_wire.hpp"
#include "transport/net/door_gate.hpp"
#include "transport/net/listen_socket.hpp"

namespace spindle::transport::http {
namespace {

using clock_type = std::chrono::steady_clock;

// draining: a refused request's response is sent and the write side shut; what
// the client still sends is read and dropped for a moment, so it reads the
// response instead of a reset (a client mid-way through a large body).
enum class phase { head, body, handler, writing, draining };

struct connection {
  int fd = -1;
  std::uint64_t gen = 0;  // tells a completion for a closed fd from one for its reuse
  std::string addr;
  int remote_port = 0;
  phase at = phase::head;
  std::string in;
  std::size_t head_end = 0, content_length = 0;
  httplib::Request req;
  std::string out;
  std::size_t out_at = 0;
  bool close_after = false;
  bool peer_closed = false;  // the client shut its sending side: answer, then close
  clock_type::time_point deadline;
  clock_type::time_point last_byte;  // when the client last sent something (or connected)
};

struct job {
  int fd;
  std::uint64_t gen;
  httplib::Request req;
  bool keep_alive;
};

struct completion {
  int fd;
  std::uint64_t gen;
  std::string bytes;
  bool close_after;
};

int remote_port_of(const sockaddr_storage& sa) {
  return ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(&sa)->sin_port);
}

}  // namespace

struct event_server::impl {
  event_server_options o;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, port = 0;
  route_table routes;
  std::function<void(int, const std::string&, httplib::Response&)> error_body;
  std::unordered_map<int, connection> conns;
  std::uint64_t next_gen = 1;
  std::thread io;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};
  std::mutex work_mu;
  std::condition_variable work_cv;
  std::deque<job> work;
  std::mutex done_mu;
  std::vector<completion> done;
  mutable std::mutex stats_mu;
  counters stats;
  std::unique_ptr<net::door_gate> gate;  // this door's share of the process's connections
  net::spare_descriptor spare;
  clock_type::time_point last_report = clock_type::now();
  std::uint64_t reported_timeouts = 0;

  ~impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void watch(int fd, std::uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, op, fd, &ev);
  }

  void close_conn(connection& c) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    gate->release(c.addr);
    conns.erase(c.fd);  // `c` is gone from here on
  }

  // Queues a response on `c` (from this thread): written as the socket takes it.
  void respond(connection& c, std::string bytes, bool close_after) {
    c.out = std::move(bytes);
    c.out_at = 0;
    c.close_after = close_after;
    c.at = phase::writing;
    c.deadline = clock_type::now() + o.write_timeout;
    flush(c);
  }

  void refuse(connection& c, int status, const std::string& why) {
    httplib::Response res;
    res.status = status;
    if (error_body) error_body(status, why, res);
    if (res.body.empty()) res.set_content(why + "\n", "text/plain");
    respond(c, serialize_response(res, false), true);
  }

  // Writes what the socket takes; done: close, or read the next request.
  void flush(connection& c) {
    while (c.out_at < c.out.size()) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_at += std::size_t(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        watch(c.fd, c.peer_closed ? EPOLLOUT : EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
        return;
      }
      return close_conn(c);
    }
    if (c.close_after) {
      ::shutdown(c.fd, SHUT_WR);
      c.at = phase::draining;
      c.deadline = clock_type::now() + std::chrono::seconds(1);
      watch(c.fd, EPOLLIN, EPOLL_CTL_MOD);
      return;
    }
    c.out.clear();
    c.at = phase::head;
    c.deadline = clock_type::now() + o.idle_timeout;
    if (c.peer_closed) {  // half-closed: answer what is buffered, then close
      const int fd = c.fd;
      parse(c);
      auto it = conns.find(fd);
      if (it != conns.end() && (it->second.at == phase::head || it->second.at == phase::body))
        close_conn(it->second);
      return;
    }
    watch(c.fd, EPOLLIN, EPOLL_CTL_MOD);
    parse(c);  // a pipelined request may be buffered already
  }

  // Reads what arrived; parses when a request may be complete.
  void on_readable(connection& c) {
    char buf[16384];
    if (c.at == phase::draining) {
      for (;;) {
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n > 0) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        return close_conn(c);  // the client is done
      }
    }
    for (;;) {
      if ((c.at == phase::handler || c.at == phase::writing) &&
          c.in.size() > o.max_header_bytes + o.max_body_bytes + 16384) {
        // Pipelined bytes past a whole request's worth while one is answered: read
        // no more until it is (a client that never reads kept the buffer growing).
        watch(c.fd, c.at == phase::writing ? std::uint32_t(EPOLLOUT) : 0u, EPOLL_CTL_MOD);
        return;
      }
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.last_byte = clock_type::now();
        if (c.in.empty() && c.at == phase::head)  // the first byte starts the header clock
          c.deadline = c.last_byte + o.header_timeout;
        c.in.append(buf, std::size_t(n));
        if (c.in.size() > o.max_header_bytes + o.max_body_bytes + 16384) break;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n == 0) {  // a half-close (request, then SHUT_WR): the client still reads
        c.peer_closed = true;
        break;
      }
      if (c.at == phase::handler) {  // the client left; the answer will be dropped
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
        c.at = phase::writing;
        c.close_after = true;
        return;
      }
      return close_conn(c);
    }
    if (!c.peer_closed) return parse(c);
    // Nothing more to read (EOF would wake us forever); a pending answer still writes.
    watch(c.fd, c.at == phase::writing ? std::uint32_t(EPOLLOUT) : 0u, EPOLL_CTL_MOD);
    if (c.at == phase::handler || c.at == phase::writing) return;  // answered, then closed
    const int fd = c.fd;
    parse(c);  // a whole request sent before the half-close is answered
    auto it = conns.find(fd);
    if (it != conns.end() && (it->second.at == phase::head || it->second.at == phase::body))
      close_conn(it->second);  // no whole request: nothing to answer
  }

  void parse(connection& c) {
    if (c.at == phase::head) {
      const auto end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (c.in.size() > o.max_header_bytes)
          refuse(c, 431, fmt::format("request headers past {} bytes", o.max_header_bytes));
        return;
      }
      c.head_end = end + 4;
      if (c.head_end > o.max_header_bytes)  // however the bytes arrived
        return refuse(c, 431, fmt::format("request headers past {} bytes", o.max_header_bytes));
      if (auto st = parse_head(c); !st) return;
      c.at = phase::body;
      c.deadline = clock_type::now() + o.body_timeout;
    }
    if (c.at != phase::body || c.in.size() - c.head_end < c.content_length) return;
    c.req.body = c.in.substr(c.head_end, c.content_length);
    c.in.erase(0, c.head_end + c.content_length);
    dispatch(c);
  }

  // The request line and headers of c.in[0, head_end) (http_wire.hpp); false:
  // refused.
  bool parse_head(connection& c) {
    c.req = httplib::Request{};
    const std::string_view head(c.in.data(), c.head_end - 4);
    const auto refusal =
        parse_request_head(head, {o.max_path_bytes, o.max_body_bytes}, c.req, c.content_length);
    if (refusal) {
      refuse(c, refusal->status, refusal->why);
      return false;
    }
    c.req.remote_addr = c.addr;
    c.req.remote_port = c.remote_port;
    return true;
  }

  bool keep_alive(const httplib::Request& r) const {
    const auto conn = r.get_header_value("Connection");
    if (r.version == "HTTP/1.0") return iequals(conn, "keep-alive");
    return !iequals(conn, "close");
  }

  void dispatch(connection& c) {
    c.at = phase::handler;
    c.deadline = clock_type::time_point::max();  // the handler's time is the server's
    {
      std::lock_guard lock(stats_mu);
      ++stats.requests;
    }
    const bool ka = keep_alive(c.req);
    {
      std::lock_guard lock(work_mu);
      work.push_back({c.fd, c.gen, std::move(c.req), ka});
    }
    work_cv.notify_one();
  }

  void run_job(job& j) {
    set_call_origin(fmt::format("{} {}:{}", o.name == "kserve-http" ? "http" : o.name,
                                j.req.remote_addr, j.req.remote_port));
    const httplib::Response res = routes.answer(j.req, o.name, error_body);
    {
      std::lock_guard lock(done_mu);
      done.push_back({j.fd, j.gen, serialize_response(res, j.keep_alive), !j.keep_alive});
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] auto w = ::write(wake_fd, &one, sizeof one);
  }

  void worker_loop() {
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
  bool evict(const std::string* peer) {
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

  net::admission admit(const std::string& peer) {
    auto a = gate->admit(peer);
    if (a != net::admission::admitted &&
        evict(a == net::admission::peer_full ? &peer : nullptr))
      a = gate->admit(peer);
    return a;
  }

  void accept_all() {
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

  void take_completions() {
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
  void expire() {
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

  void io_loop() {
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
};

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
