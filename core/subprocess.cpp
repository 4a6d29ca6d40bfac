#include "core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

extern char** environ;

namespace spindle {

expected<child_process> child_process::spawn(const std::vector<std::string>& argv,
                                             const std::vector<std::string>& env,
                                             bool merge_stderr) {
  if (argv.empty()) return make_error(errc::invalid_argument, "spawn: empty argv");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return make_error(errc::io_error, "spawn {}: pipe: {}", argv[0], std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  if (merge_stderr) posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);
  // The child starts with no signal blocked and SIGINT/SIGTERM at their default
  // action: a parent that waits for its stop signals with sigwait (launch) has
  // them blocked, and a launcher child (ssh, ip netns exec, sleep) inheriting
  // that mask would never end on the SIGTERM launch forwards.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, stops;
  sigemptyset(&none);
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &stops);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, cargv.data(), cenv.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return make_error(errc::io_error, "spawn {}: {}", argv[0], std::strerror(rc));
  }
  child_process c;
  c.pid_ = pid;
  c.out_fd_ = fds[0];
  return c;
}

child_process::child_process(child_process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      out_fd_(std::exchange(o.out_fd_, -1)),
      buffer_(std::move(o.buffer_)) {}

child_process& child_process::operator=(child_process&& o) noexcept {
  std::swap(pid_, o.pid_);
  std::swap(out_fd_, o.out_fd_);
  std::swap(buffer_, o.buffer_);
  return *this;
}

child_process::~child_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

expected<std::string> child_process::read_line(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    // Poll at least once, so a timeout of 0 still takes output that is ready.
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, int(std::max<std::int64_t>(left, 0))) <= 0) {
      if (left <= 0)
        return make_error(errc::unavailable, "child {}: no output line within {} ms", pid_,
                          timeout_ms);
      continue;
    }
    char buf[4096];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return make_error(errc::unavailable, "child {}: output closed", pid_);
    buffer_.append(buf, std::size_t(n));
  }
}

expected<std::string> child_process::wait_for(std::string_view prefix, int timeout_ms) {
  for (;;) {
    SPINDLE_ASSIGN_OR_RETURN(auto line, read_line(timeout_ms));
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
}

void child_process::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> child_process::try_wait() {
  if (pid_ <= 0) return std::nullopt;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return std::nullopt;
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int child_process::wait() {
  if (pid_ <= 0) return -1;
  int st = 0;
  waitpid(pid_, &st, 0);
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace spindle
