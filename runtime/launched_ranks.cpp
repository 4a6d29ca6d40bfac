#include "runtime/launched_ranks.hpp"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace spindle::runtime {
namespace {

std::vector<std::string> launch_env(const launched_rank& r) {
  std::vector<std::string> env = {fmt::format("SPINDLE_LAUNCH_PID={}", ::getpid())};
  env.insert(env.end(), r.env.begin(), r.env.end());
  return env;
}

// Relays the lines rank `r` has written so far; after it exited, its last ones
// (often the error it exited on), which the pipe still holds.
void relay_lines(launched_rank& r) {
  while (auto line = r.process->read_line(0)) fmt::print("[{}] {}\n", r.label, *line);
}

// Reaps a rank that exited, says so, and (with --restart) starts it again once
// its backoff has passed. Returns whether the rank is running (or will be).
bool tend(launched_rank& r, bool restart) {
  using namespace std::chrono;
  if (r.process) {
    const auto code = r.process->try_wait();
    if (!code) return true;
    relay_lines(r);
    r.process.reset();
    if (!restart) {
      fmt::print("[{}] exited with {}\n", r.label, *code);
      return false;
    }
    r.backoff = std::min<milliseconds>(seconds(30), r.backoff.count() ? 2 * r.backoff : seconds(1));
    r.restart_at = steady_clock::now() + r.backoff;
    fmt::print("[{}] exited with {}; restarting in {} ms\n", r.label, *code, r.backoff.count());
    return true;
  }
  if (!restart || steady_clock::now() < r.restart_at) return restart;
  auto c = child_process::spawn(r.argv, launch_env(r), true);
  if (!c) {
    fmt::print("[{}] cannot restart: {}\n", r.label, c.error().to_string());
    r.restart_at = steady_clock::now() + r.backoff;
    return true;
  }
  r.process.emplace(std::move(*c));
  fmt::print("[{}] restarted\n", r.label);
  return true;
}

// Forwards signal `sig` to every running rank, waits for each and says how it exited.
void stop_all(std::vector<launched_rank>& ranks, int sig) {
  for (auto& r : ranks)
    if (r.process) r.process->signal(sig);
  for (auto& r : ranks)
    if (r.process) {
      const int code = r.process->wait();
      relay_lines(r);
      fmt::print("[{}] exited with {}\n", r.label, code);
    }
}

}  // namespace

bool is_this_machine(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::vector<std::string> launcher_argv(const std::string& launcher, const std::string& host,
                                       int rank, const std::vector<std::string>& argv) {
  std::string prefix = launcher;
  for (auto [key, value] :
       {std::pair<std::string, std::string>{"{host}", host}, {"{rank}", std::to_string(rank)}})
    for (std::size_t at = prefix.find(key); at != std::string::npos; at = prefix.find(key))
      prefix.replace(at, key.size(), value);
  std::string cmd = "exec " + prefix;  // the launcher replaces the shell: signals reach it
  for (const auto& arg : argv) {
    std::string q = "'";
    for (char ch : arg) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    cmd += " " + q + "'";
  }
  return {"/bin/sh", "-c", cmd};
}

status spawn_rank(std::vector<launched_rank>& ranks, int rank, std::string label,
                  std::vector<std::string> argv, std::vector<std::string> env) {
  launched_rank lr;
  lr.rank = rank, lr.label = std::move(label), lr.argv = std::move(argv), lr.env = std::move(env);
  SPINDLE_ASSIGN_OR_RETURN(auto c, child_process::spawn(lr.argv, launch_env(lr), true));
  lr.process.emplace(std::move(c));
  ranks.push_back(std::move(lr));
  return status::ok();
}

void supervise(std::vector<launched_rank>& ranks, sigset_t set, bool restart) {
  timespec tick{0, 100'000'000};
  for (bool any = !ranks.empty(); any;) {
    for (auto& r : ranks)
      if (r.process) relay_lines(r);
    std::fflush(stdout);
    siginfo_t info;
    if (sigtimedwait(&set, &info, &tick) > 0) return stop_all(ranks, info.si_signo);
    any = false;
    for (auto& r : ranks) any = tend(r, restart) || any;
  }
}

status follow_launch() {
  const char* launcher = std::getenv("SPINDLE_LAUNCH_PID");
  if (!launcher) return status::ok();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (std::to_string(::getppid()) != launcher)
    return make_error(errc::unavailable, "spindle launch (pid {}) is gone", launcher);
  return status::ok();
}

}  // namespace spindle::runtime
