// Runs the real `spindle` binary as a user would (cli_test, colocate_cli_test):
// its exit code and its output, stderr included unless asked otherwise, and
// the check that a command is refused naming what is wrong.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace cli_testing {

struct run_result {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs spindle with `args`; stderr is captured too unless `stdout_only`.
inline run_result run(const std::string& args, bool stdout_only = false) {
  std::string cmd =
      std::string(SPINDLE_BINARY) + " " + args + (stdout_only ? " 2>/dev/null" : " 2>&1");
  run_result r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline run_result run_stdout(const std::string& args) { return run(args, true); }

// Runs spindle with `args`, which must be refused: exit 1, its output saying
// `message`. Returns the run for further checks.
inline run_result refused(const std::string& args, const std::string& message) {
  run_result r = run(args);
  EXPECT_EQ(r.code, 1) << "spindle " << args;
  EXPECT_NE(r.out.find(message), std::string::npos) << "spindle " << args << ":\n" << r.out;
  return r;
}

}  // namespace cli_testing

using cli_testing::refused;
using cli_testing::run;
using cli_testing::run_result;
using cli_testing::run_stdout;
