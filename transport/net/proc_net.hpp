// Linux's view of a process's TCP sockets without iproute2: the rows of
// /proc/net/tcp{,6} and the socket inodes behind a process's descriptors.
// Plain reads of /proc; safe from any thread.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

namespace spindle::transport::net {

/// One socket of /proc/net/tcp{,6}: its local and remote "ADDR:PORT" (hex, as
/// the kernel prints them), its state (hex; "0A" is listening) and its inode (0
/// for a socket no process holds, one in TIME_WAIT).
struct tcp_socket_row {
  std::string local, remote, state, inode;
};

/// The sockets `table` lists ("/proc/net/tcp" or "/proc/net/tcp6"); none when unreadable.
std::vector<tcp_socket_row> read_tcp_table(const char* table);

/// The inodes of the sockets open in process `pid` ("self": this process), from
/// /proc/PID/fd; none when that folder cannot be read.
std::unordered_set<std::string> socket_inodes(const std::string& pid);

}  // namespace spindle::transport::net
