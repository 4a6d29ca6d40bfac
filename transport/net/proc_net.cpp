#include "transport/net/proc_net.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace spindle::transport::net {

std::vector<tcp_socket_row> read_tcp_table(const char* table) {
  std::vector<tcp_socket_row> rows;
  std::ifstream f(table);
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string slot, queues, timer, retr, uid, timeout;
    tcp_socket_row r;
    in >> slot >> r.local >> r.remote >> r.state >> queues >> timer >> retr >> uid >> timeout >>
        r.inode;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::unordered_set<std::string> socket_inodes(const std::string& pid) {
  std::unordered_set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + pid + "/fd", ec)) {
    const auto target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) out.insert(target.substr(8, target.size() - 9));
  }
  return out;
}

}  // namespace spindle::transport::net
