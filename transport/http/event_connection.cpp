// One connection of the HTTP event server: what arrived is read and parsed
// (http_wire.hpp), a complete request goes to a worker, and its response is
// written as the socket takes it; refusals close or drain the connection.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.hpp"
#include "transport/http/event_server_impl.hpp"
#include "transport/http/http_wire.hpp"

namespace spindle::transport::http {

using detail::clock_type;
using detail::connection;
using detail::phase;

// Queues a response on `c` (from this thread): written as the socket takes it.
void event_server::impl::respond(connection& c, std::string bytes, bool close_after) {
  c.out = std::move(bytes);
  c.out_at = 0;
  c.close_after = close_after;
  c.at = phase::writing;
  c.deadline = clock_type::now() + o.write_timeout;
  flush(c);
}

void event_server::impl::refuse(connection& c, int status, const std::string& why) {
  httplib::Response res;
  res.status = status;
  if (error_body) error_body(status, why, res);
  if (res.body.empty()) res.set_content(why + "\n", "text/plain");
  respond(c, serialize_response(res, false), true);
}

// Writes what the socket takes; done: close, or read the next request.
void event_server::impl::flush(connection& c) {
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
void event_server::impl::on_readable(connection& c) {
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

void event_server::impl::parse(connection& c) {
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
    // A client that waits to be told to send its body (curl past 1 MB, RFC 9110
    // §10.1.1) gets it at once instead of after its own timeout (1 s for curl).
    if (c.in.size() - c.head_end < c.content_length &&
        iequals(c.req.get_header_value("Expect"), "100-continue")) {
      static constexpr std::string_view k100 = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)::send(c.fd, k100.data(), k100.size(), MSG_NOSIGNAL);  // best effort: 25 bytes
    }
  }
  if (c.at != phase::body || c.in.size() - c.head_end < c.content_length) return;
  c.req.body = c.in.substr(c.head_end, c.content_length);
  c.in.erase(0, c.head_end + c.content_length);
  dispatch(c);
}

// The request line and headers of c.in[0, head_end) (http_wire.hpp); false:
// refused.
bool event_server::impl::parse_head(connection& c) {
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

bool event_server::impl::keep_alive(const httplib::Request& r) const {
  const auto conn = r.get_header_value("Connection");
  if (r.version == "HTTP/1.0") return iequals(conn, "keep-alive");
  return !iequals(conn, "close");
}

void event_server::impl::dispatch(connection& c) {
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

}  // namespace spindle::transport::http
