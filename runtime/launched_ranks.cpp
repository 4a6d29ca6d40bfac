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
  while (auto line = r.process->read_line(0)) {
    fmt::print("[{}] {}\n", r.label, *line);
    if (*line == "ready" || line->rfind("listening ", 0) == 0) r.started = true;
    if (!line->empty()) r.last_line = *line;
  }
}

// What tending a rank found: still running (or waiting to restart), down for
// good, or refused to start (exited non-zero before it ever started).
enum class rank_state { up, down, refused };

// Reaps a rank that exited, says so, and (with --restart) starts it again once
// its backoff has passed. `*code` gets the exit code of a rank that exited.
rank_state tend(launched_rank& r, bool restart, int* code) {
  using namespace std::chrono;
  if (r.process) {
    const auto exited = r.process->try_wait();
    if (!exited) return rank_state::up;
    relay_lines(r);
    r.process.reset();
    *code = *exited;
    if (*exited != 0 && !r.started) {  // a refusal: restarting cannot help
      fmt::print("[{}] exited with {} before it started\n", r.label, *exited);
      return rank_state::refused;
    }
    if (!restart) {
      fmt::print("[{}] exited with {}\n", r.label, *exited);
      return rank_state::down;
    }
    r.backoff = std::min<milliseconds>(seconds(30), r.backoff.count() ? 2 * r.backoff : seconds(1));
    r.restart_at = steady_clock::now() + r.backoff;
    fmt::print("[{}] exited with {}; restarting in {} ms\n", r.label, *exited, r.backoff.count());
    return rank_state::up;
  }
  if (!restart) return rank_state::down;
  if (steady_clock::now() < r.restart_at) return rank_state::up;
  auto c = child_process::spawn(r.argv, launch_env(r), true);
  if (!c) {
    fmt::print("[{}] cannot restart: {}\n", r.label, c.error().to_string());
    r.restart_at = steady_clock::now() + r.backoff;
    return rank_state::up;
  }
  r.process.emplace(std::move(*c));
  fmt::print("[{}] restarted\n", r.label);
  return rank_state::up;
}

// Forwards signal `sig` to every running rank and waits for each, relaying its
// lines, for `grace`; then (or at once when another stop signal of `set`
// comes) kills the rest with SIGKILL. Says how each exited.
void stop_all(std::vector<launched_rank>& ranks, int sig, sigset_t set,
              std::chrono::milliseconds grace) {
  for (auto& r : ranks)
    if (r.process) r.process->signal(sig);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  timespec tick{0, 50'000'000};
  for (bool left = true; left;) {
    left = false;
    for (auto& r : ranks) {
      if (!r.process) continue;
      relay_lines(r);
      if (auto code = r.process->try_wait()) {
        relay_lines(r);
        r.process.reset();
        fmt::print("[{}] exited with {}\n", r.label, *code);
      } else {
        left = true;
      }
    }
    std::fflush(stdout);
    if (!left) break;
    siginfo_t info;
    const bool again = sigtimedwait(&set, &info, &tick) > 0;
    if (!again && std::chrono::steady_clock::now() < deadline) continue;
    for (auto& r : ranks)
      if (r.process) {
        fmt::print("[{}] still running {}; killed\n", r.label,
                   again ? "at a second stop signal" : fmt::format("{} ms after the stop", grace.count()));
        r.process->signal(SIGKILL);
        fmt::print("[{}] exited with {}\n", r.label, r.process->wait());
        r.process.reset();
      }
    break;
  }
  std::fflush(stdout);
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

status supervise(std::vector<launched_rank>& ranks, sigset_t set, bool restart,
                 std::chrono::milliseconds grace) {
  timespec tick{0, 100'000'000};
  for (bool any = !ranks.empty(); any;) {
    for (auto& r : ranks)
      if (r.process) relay_lines(r);
    std::fflush(stdout);
    siginfo_t info;
    if (sigtimedwait(&set, &info, &tick) > 0) {
      stop_all(ranks, info.si_signo, set, grace);
      return status::ok();
    }
    any = false;
    for (auto& r : ranks) {
      int code = 0;
      const rank_state state = tend(r, restart, &code);
      if (state == rank_state::refused) {
        fmt::print("launch: [{}] did not start; stopping the other ranks\n", r.label);
        stop_all(ranks, SIGTERM, set, grace);
        return make_error(errc::unavailable, "{} exited with {} before it started: {}", r.label,
                          code, r.last_line.empty() ? "(it printed nothing)" : r.last_line);
      }
      any = any || state == rank_state::up;
    }
  }
  return status::ok();
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
