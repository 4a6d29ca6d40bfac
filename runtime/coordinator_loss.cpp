#include "runtime/coordinator_loss.hpp"

#include <linux/close_range.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/log.hpp"

namespace spindle::runtime {

// True when something accepts TCP connections on host:port.
bool listening(const config::server_spec& s) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(s.host.c_str(), std::to_string(s.port).c_str(), &hints, &res) != 0)
    return false;
  bool ok = false;
  for (auto* r = res; r && !ok; r = r->ai_next) {
    const int fd = ::socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
    if (fd < 0) continue;
    ok = ::connect(fd, r->ai_addr, r->ai_addrlen) == 0;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return ok;
}

// The coordinator is gone (killed, restarting). A member keeps nothing a new
// coordinator could use (its actor handles, epochs and bridges name the old
// one), so it waits until rank 0 listens again and then re-executes itself
// with the same command line: same pid (launch keeps tracking it), a fresh
// shard of the start plan, and a join that re-registers its descriptor and
// bridge, from which the new coordinator rebuilds the cluster view. SIGINT and
// SIGTERM still stop it while it waits.
status rejoin(const config::topology& topo, const config::server_spec& me, sigset_t stop,
              const std::vector<std::string>& args) {
  SPINDLE_ASSIGN_OR_RETURN(auto coord, config::node_server(topo, 0));
  log::warn("node {}: the coordinator is gone; rejoining when {}:{} listens again", me.name,
            coord.host, coord.port);
  sigdelset(&stop, kCoordinatorLost);
  sigdelset(&stop, kCoordinatorBack);
  const timespec poll{0, 200'000'000};
  for (;;) {
    if (const int sig = sigtimedwait(&stop, nullptr, &poll); sig > 0) {
      log::info("node {}: stopping on signal {}", me.name, sig);
      std::fflush(nullptr);
      std::_Exit(0);  // as a normal stop of a node with a shard: no UCX teardown
    }
    if (listening(coord)) break;
  }
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  // Sockets, UCX and CAF descriptors must not survive into the new image (the
  // node's own port would still be bound there).
  ::close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
  ::execv("/proc/self/exe", argv.data());
  return make_error(errc::io_error, "node {}: cannot re-execute to rejoin: {}", me.name,
                    std::strerror(errno));
}

// Polls rank 0's port until the coordinator is back: listening after its port
// was seen closed, or 5 s after the loss (a dying coordinator's port may still
// accept for a moment while its sockets close one by one). Then raises
// kCoordinatorBack, unless `done` was set first.
void watch_for_coordinator(const std::atomic<bool>& done, const config::server_spec& coord) {
  const auto lost_at = std::chrono::steady_clock::now();
  bool seen_closed = false;
  while (!done) {
    const bool up = listening(coord);
    if (!up) seen_closed = true;
    if (up && (seen_closed || std::chrono::steady_clock::now() - lost_at > std::chrono::seconds(5)))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!done) ::kill(::getpid(), kCoordinatorBack);
}

}  // namespace spindle::runtime
