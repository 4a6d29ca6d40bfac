// Internal to the HTTP event server (event_server.cpp: accepting, the event
// loop, deadlines, workers; event_connection.cpp: one connection's reading,
// parsing, dispatch and writing): the connection records and the server state.
#pragma once

#include <netinet/in.h>
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
#include "transport/http/event_server.hpp"
#include "transport/net/door_gate.hpp"
#include "transport/net/listen_socket.hpp"

namespace spindle::transport::http {
namespace detail {

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

inline int remote_port_of(const sockaddr_storage& sa) {
  return ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(&sa)->sin_port);
}

}  // namespace detail

struct event_server::impl {
  using clock_type = detail::clock_type;
  using connection = detail::connection;
  using job = detail::job;
  using completion = detail::completion;

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

  void watch(int fd, std::uint32_t events, int op);
  void close_conn(connection& c);
  // Queues a response on `c` (from this thread): written as the socket takes it.
  void respond(connection& c, std::string bytes, bool close_after);
  void refuse(connection& c, int status, const std::string& why);
  // Writes what the socket takes; done: close, or read the next request.
  void flush(connection& c);
  // Reads what arrived; parses when a request may be complete.
  void on_readable(connection& c);
  void parse(connection& c);
  // The request line and headers of c.in[0, head_end) (http_wire.hpp); false:
  // refused.
  bool parse_head(connection& c);
  bool keep_alive(const httplib::Request& r) const;
  void dispatch(connection& c);
  void run_job(job& j);
  void worker_loop();
  // Full: closes the connection whose client has sent nothing longest (of
  // `peer` when given), if no request of it is being answered and it has been
  // silent at least net::kEvictIdleSeconds.
  bool evict(const std::string* peer);
  net::admission admit(const std::string& peer);
  void accept_all();
  void take_completions();
  // Deadlines: an unfinished request gets 408, an idle connection is closed,
  // a response nobody reads is dropped.
  void expire();
  void io_loop();
};

}  // namespace spindle::transport::http
