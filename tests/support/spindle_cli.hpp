// Runs the spindle binary under test as a user would from a shell: its stdout
// and stderr together, and its exit code, with a time bound (a hung command
// fails its test instead of hanging the suite).
#pragma once

#include <string>
#include <vector>

#include "core/subprocess.hpp"

namespace spindle::testing {

struct cli_outcome {
  int code = 0;
  std::string out;
};

/// `spindle ARGS...` (each argument quoted), killed after `timeout_s` seconds.
inline cli_outcome run_spindle_cli(const std::vector<std::string>& args, int timeout_s = 60) {
  std::string cmd = "timeout " + std::to_string(timeout_s) + " '" + SPINDLE_BINARY + "'";
  for (const auto& a : args) {
    std::string q;
    for (char ch : a) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    cmd += " '" + q + "'";
  }
  auto p = child_process::spawn({"/bin/sh", "-c", cmd + " 2>&1"});
  cli_outcome o;
  if (!p) return {127, p.error().to_string()};
  while (auto line = p->read_line((timeout_s + 30) * 1000)) o.out += *line + "\n";
  o.code = p->wait();
  return o;
}

}  // namespace spindle::testing
