// `spindle shell --connect HOST:PORT [--token-file F] [-c 'CMD; CMD']`: an
// operator's console over the Admin and Inference interfaces. Interactive mode
// has line editing, history and tab completion of commands and model names
// (libedit); -c runs commands non-interactively for scripts and tests. Every
// error is one line; bad input never ends the shell (exit code 1 at the end of
// -c when a command failed).
#include <editline/readline.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "apps/commands/command.hpp"
#include "client/admin_console.hpp"

namespace spindle::apps {
namespace {

using namespace client;  // the console the shell drives
namespace rpc = transport::rpc;

console_state* g_shell = nullptr;  // the completion callback's view (libedit has no user pointer)

char* complete_word(const char*, int state) {
  static std::vector<std::string> matches;
  static std::size_t next = 0;
  if (state == 0) {
    next = 0;
    matches = g_shell ? completions(*g_shell,
                                    std::string(rl_line_buffer, std::size_t(std::max(0, rl_point))))
                      : std::vector<std::string>{};
  }
  return next < matches.size() ? strdup(matches[next++].c_str()) : nullptr;
}

char** complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;
  return rl_completion_matches(text, complete_word);
}

struct shell_args {
  std::string connect = "127.0.0.1:7400", token, token_file, commands;
};

status run_shell(const shell_args& a) {
  console_state s;
  s.token = a.token;
  if (s.token.empty() && !a.token_file.empty()) {
    std::ifstream in(a.token_file);
    if (!in || !std::getline(in, s.token))
      return make_error(errc::not_found, "{}: cannot read the admin token", a.token_file);
  }
  SPINDLE_ASSIGN_OR_RETURN(s.client, rpc::rpc_client::connect(a.connect, 30000));
  refresh_names(s);
  bool failed = false;
  if (!a.commands.empty()) {
    std::stringstream cmds(a.commands);
    for (std::string c; std::getline(cmds, c, ';');) {
      if (!run_command(s, c, failed)) break;
    }
    return failed ? make_error(errc::invalid_argument, "a command failed") : status::ok();
  }
  g_shell = &s;
  signal(SIGINT, SIG_IGN);  // Ctrl-C at the prompt must not end the shell (quit or Ctrl-D do)
  rl_attempted_completion_function = complete;
  const std::string history =
      std::string(getenv("HOME") ? getenv("HOME") : ".") + "/.spindle_history";
  read_history(history.c_str());
  fmt::print("spindle shell connected to {} (help for commands, quit or Ctrl-D to leave)\n",
             a.connect);
  for (;;) {
    errno = 0;
    char* raw = readline("spindle> ");
    if (raw == nullptr && errno == EINTR) {  // Ctrl-C: a fresh prompt, not an exit
      fmt::print("\n");
      continue;
    }
    if (raw == nullptr) break;  // Ctrl-D
    std::string line(raw);
    free(raw);
    if (!split_words(line).empty()) add_history(line.c_str());
    if (!run_command(s, line, failed)) break;
  }
  write_history(history.c_str());
  g_shell = nullptr;
  return status::ok();
}

}  // namespace

void register_shell(CLI::App& app, global_options&) {
  auto [cmd, a] = add_command<shell_args>(
      app, "shell", "Operator console: stats, tunables and live reconfiguration over Admin");
  cmd->add_option("--connect", a->connect, "Server HOST:PORT")->capture_default_str();
  cmd->add_option("--token", a->token, "Admin token");
  cmd->add_option("--token-file", a->token_file, "File holding the admin token");
  cmd->add_option("-c", a->commands, "Run these ';'-separated commands and exit");
  on_run(cmd, [a] { return run_shell(*a); });
}

}  // namespace spindle::apps
