#include "transport/net/local_peer.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>

namespace spindle::transport::net {
namespace {

// The inodes of this process's sockets (/proc/self/fd).
std::unordered_set<std::string> own_socket_inodes() {
  std::unordered_set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const auto target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) out.insert(target.substr(8, target.size() - 9));
  }
  return out;
}

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
bool from_this_process(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return false;
  const std::string want = proc_net_address(sa);
  if (want.empty()) return false;
  const auto mine = own_socket_inodes();
  std::ifstream f("/proc/net/tcp");
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
    in >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (local == want) return mine.count(inode) > 0;
  }
  return false;
}

}  // namespace spindle::transport::net
