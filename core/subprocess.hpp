// Starts a child process with its stdout on a pipe, reads its output line by
// line with a timeout, signals and reaps it. Used by `spindle launch`-style
// tooling, tests and benchmarks that run real server processes. One owner thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle {

class child_process {
 public:
  /// Runs argv[0] (a path) with argv; `env` entries ("KEY=VALUE") are added to
  /// the inherited environment. stdin is /dev/null; stderr is inherited, or
  /// with `merge_stderr` read with stdout (a relay that prefixes every line).
  static expected<child_process> spawn(const std::vector<std::string>& argv,
                                       const std::vector<std::string>& env = {},
                                       bool merge_stderr = false);
  child_process(child_process&&) noexcept;
  child_process& operator=(child_process&&) noexcept;
  /// Kills (SIGKILL) and reaps a child that is still running.
  ~child_process();

  pid_t pid() const { return pid_; }
  /// Next line of stdout without the newline; errc::unavailable on timeout or EOF.
  expected<std::string> read_line(int timeout_ms);
  /// Reads lines until one starts with `prefix`; returns the rest of that line.
  expected<std::string> wait_for(std::string_view prefix, int timeout_ms);
  /// Sends `sig` (SIGTERM, SIGKILL, ...).
  void signal(int sig);
  /// Waits for exit; returns the exit code, or 128 + signal number.
  int wait();
  /// The exit code (or 128 + signal) when the child has ended, reaping it;
  /// nullopt while it runs (never blocks).
  std::optional<int> try_wait();

 private:
  child_process() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

}  // namespace spindle
