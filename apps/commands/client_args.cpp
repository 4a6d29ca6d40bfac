#include "apps/commands/client_args.hpp"

#include <fmt/format.h>

#include <fstream>

namespace spindle::apps {

namespace rpc = transport::rpc;

// --connect A,B,C: the doors of several nodes (a cluster's ranks).
std::vector<std::string> endpoints_of(const client_args& c) {
  return rpc::rpc_client::split_endpoints(c.connect);
}

// The first door that accepts, moving on from a refused or dead one (named on stderr).
expected<std::unique_ptr<rpc::rpc_client>> open_door(const client_args& c) {
  std::vector<std::string> skipped;
  auto client = rpc::rpc_client::connect_any(c.connect, c.timeout_ms, &skipped);
  if (client)
    for (const auto& why : skipped) fmt::print(stderr, "spindle: {}; tried the next door\n", why);
  return client;
}

expected<std::string> token_of(const client_args& c) {
  if (!c.token.empty()) return c.token;
  if (c.token_file.empty())
    return make_error(errc::invalid_argument, "admin: give --token or --token-file");
  std::ifstream in(c.token_file);
  std::string t;
  if (!in || !std::getline(in, t))
    return make_error(errc::not_found, "{}: cannot read the admin token", c.token_file);
  return t;
}

}  // namespace spindle::apps
