// A real redis-server for tests and benchmarks: started on a free loopback port
// with persistence off and its log in a temp file, stopped (SIGTERM, then
// reaped) when the object dies. Header-only; one owner thread.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "core/subprocess.hpp"
#include "hps/vdb/redis_connection.hpp"

namespace spindle::testing {

/// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// Path of redis-server, or "" when it is not installed.
inline std::string redis_server_path() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

class redis_server {
 public:
  /// Starts redis-server and waits (up to 10 s) until it answers PING.
  static expected<std::unique_ptr<redis_server>> start() {
    const std::string exe = redis_server_path();
    if (exe.empty()) return make_error(errc::not_found, "redis-server is not installed");
    auto dir = std::filesystem::temp_directory_path() /
               ("spindle-redis-" + std::to_string(::getpid()) + "-" +
                std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(dir);
    for (int attempt = 0; attempt < 5; ++attempt) {
      const int port = free_loopback_port();
      auto child = child_process::spawn({exe, "--port", std::to_string(port), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--dir", dir.string(),
                                         "--logfile", (dir / "redis.log").string()});
      if (!child) return std::move(child).error();
      for (int i = 0; i < 200; ++i) {
        if (auto c = hps::redis_connection::connect("127.0.0.1", port, 200)) {
          if (c->command({"PING"})) {
            return std::unique_ptr<redis_server>(new redis_server(std::move(*child), port, dir));
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    return make_error(errc::unavailable, "redis-server did not answer PING (log in {})",
                      dir.string());
  }

  ~redis_server() {
    if (!down_) {
      child_.signal(SIGTERM);
      child_.wait();
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  /// Stops the server (with `sig`: SIGKILL for a crash) and starts a fresh
  /// (empty) one on the same port, as a Redis restart looks to clients; waits
  /// until it answers PING.
  status restart(int sig = SIGTERM) {
    if (!down_) {
      child_.signal(sig);
      child_.wait();
    }
    down_ = false;
    const std::string exe = redis_server_path();
    auto child = child_process::spawn({exe, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no", "--dir", dir_.string(),
                                       "--logfile", (dir_ / "redis.log").string()});
    if (!child) return std::move(child).error();
    child_ = std::move(*child);
    for (int i = 0; i < 200; ++i) {
      if (auto c = hps::redis_connection::connect("127.0.0.1", port_, 200))
        if (c->command({"PING"})) return status::ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return make_error(errc::unavailable, "redis-server did not come back on port {}", port_);
  }

  /// Kills the server (SIGKILL) and leaves it down until restart().
  void kill() {
    child_.signal(SIGKILL);
    child_.wait();
    down_ = true;
  }
  /// Sends `sig` to the server (SIGSTOP / SIGCONT: a frozen host).
  void signal(int sig) { child_.signal(sig); }
  int port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  redis_server(child_process child, int port, std::filesystem::path dir)
      : child_(std::move(child)), port_(port), dir_(std::move(dir)) {}
  child_process child_;
  int port_;
  std::filesystem::path dir_;
  bool down_ = false;  // killed, not restarted yet
};

}  // namespace spindle::testing
