// What every `spindle client` subcommand shares: the door(s) to call
// (--connect A,B,C), the model, the admin token and the per-call timeout.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::apps {

struct client_args {
  std::string connect = "127.0.0.1:7400", model, token, token_file;
  int timeout_ms = 30000;
};

/// --connect A,B,C: the doors of several nodes (a cluster's ranks).
std::vector<std::string> endpoints_of(const client_args& c);
/// The first door that accepts, moving on from a refused or dead one (named on stderr).
expected<std::unique_ptr<transport::rpc::rpc_client>> open_door(const client_args& c);
/// --token, or the first line of --token-file.
expected<std::string> token_of(const client_args& c);

/// `client graph update|version` (client_graph.cpp).
void add_graph_command(CLI::App& client_cmd, std::shared_ptr<client_args> c);

}  // namespace spindle::apps
