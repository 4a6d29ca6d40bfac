#include "transport/net/local_peer.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "transport/net/proc_net.hpp"

namespace spindle::transport::net {
namespace {

// /proc/net/tcp's "ADDR:PORT" (hex, IPv4 in host byte order) for a peer.
std::string proc_net_address(const sockaddr_storage& sa) {
  if (sa.ss_family != AF_INET) return {};
  const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
  return fmt::format("{:08X}:{:04X}", in.sin_addr.s_addr, ntohs(in.sin_port));
}

}  // namespace

// True when the connection `fd` accepted on loopback was opened by this very
// process (the peer's socket is one of ours): a dialer relays its own
// library's links, never another local process's.
// The peer's socket is the row whose local address is the peer's and whose
// remote is this end's: another row may share the peer's address and port (one
// in TIME_WAIT from an earlier connection to another port, inode 0).
bool from_this_process(int fd) {
  sockaddr_storage peer{}, self{};
  socklen_t len = sizeof peer, self_len = sizeof self;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0)
    return false;
  const std::string want = proc_net_address(peer), ours = proc_net_address(self);
  if (want.empty() || ours.empty()) return false;
  const auto mine = socket_inodes("self");
  for (const auto& row : read_tcp_table("/proc/net/tcp"))
    if (row.local == want && row.remote == ours) return mine.count(row.inode) > 0;
  return false;
}

}  // namespace spindle::transport::net
