// The operator's console behind `spindle shell`: its commands over the Admin and
// Inference interfaces, each error one line on stderr, and what tab completion
// offers after a partial line. One thread (the shell's).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/rpc/rpc_client.hpp"

namespace spindle::client {

struct console_state {
  std::unique_ptr<transport::rpc::rpc_client> client;
  std::string token;
  std::vector<std::string> model_names;                           // for completion
  std::map<std::string, std::vector<std::string>> tunable_names;  // per model, fetched on demand
};

/// The words a line splits into (at whitespace).
std::vector<std::string> split_words(const std::string& line);

/// The model names tab completion offers (at start, and after load / unload).
void refresh_names(console_state& s);

/// What tab offers at the end of `line` (the text typed so far): the candidates
/// for the word being typed that start with its prefix.
std::vector<std::string> completions(console_state& s, const std::string& line);

/// Runs one command line, printing its result (an error on stderr, setting
/// `failed`); returns false on `quit`.
bool run_command(console_state& s, const std::string& line, bool& failed);

}  // namespace spindle::client
