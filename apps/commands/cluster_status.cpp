// `spindle cluster-status`: asks a cluster's coordinator, through the token
// gate, for its members and their state, and prints them as a table (or JSON).
// `spindle cluster-leave`: asks it to let a rank leave gracefully.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <functional>

#include "actors/bridge_messages.hpp"
#include "actors/node_actor.hpp"
#include "apps/commands/command.hpp"
#include "apps/commands/members_table.hpp"
#include "config/topology.hpp"
#include "runtime/cluster_link.hpp"
#include "runtime/cluster_token.hpp"
#include "runtime/token_file.hpp"

namespace spindle::apps {
namespace {

// The cluster token: --token-file, else SPINDLE_CLUSTER_TOKEN, else the TOML's file.
expected<std::string> token_of(const config::topology& topo, const std::string& token_path) {
  // --token-file, else SPINDLE_CLUSTER_TOKEN, else the TOML's file on this host.
  const char* env = token_path.empty() ? std::getenv(runtime::kClusterTokenEnv) : nullptr;
  SPINDLE_ASSIGN_OR_RETURN(auto handed, runtime::handed_cluster_token("", env));
  if (handed) return *handed;
  return runtime::token_file(token_path.empty() ? topo.token_file : token_path,
                             "cluster token file", false);
}

// Reaches rank 0 of the cluster at `path` through its gate and runs `ask`
// with a scoped actor, rank 0's actor and the token.
using coordinator_ask =
    std::function<status(caf::scoped_actor&, const caf::actor&, const std::string& token)>;
status ask_coordinator(const std::string& path, const std::string& token_path,
                       const coordinator_ask& ask) {
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(path));
  SPINDLE_ASSIGN_OR_RETURN(auto token, token_of(topo, token_path));
  SPINDLE_ASSIGN_OR_RETURN(auto coord_spec, config::node_server(topo, 0));
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  caf::actor_system sys{cfg};
  SPINDLE_ASSIGN_OR_RETURN(auto link, runtime::connect_gated(sys, coord_spec, token, 5));
  caf::scoped_actor self{sys};
  return ask(self, link.actor, token);
}

status run_status(caf::scoped_actor& self, const caf::actor& coord, const std::string& token,
                  bool json) {
  status result;
  self->request(coord, std::chrono::seconds(10), actors::status_atom::value, token)
      .receive(
          [&](const std::string& text) {
            if (json) {
              fmt::print("{}\n", text);
            } else {
              fmt::print("{}", members_table(nlohmann::json::parse(text)));
            }
          },
          [&](caf::error& e) {
            result = make_error(errc::unavailable, "status query failed: {}",
                                actors::error_text(e));
          });
  return result;
}

status run_leave(caf::scoped_actor& self, const caf::actor& coord, const std::string& token,
                 int rank) {
  status result;
  self->request(coord, std::chrono::seconds(10), actors::leave_atom::value, rank, token)
      .receive(
          [&](actors::ok_atom) {
            fmt::print("rank {} leaves: the placement re-plans without it, and it stops once "
                       "every member reads that plan\n",
                       rank);
          },
          [&](caf::error& e) {
            result = make_error(errc::invalid_argument, "cluster-leave --rank {}: {}", rank,
                                actors::error_text(e));
          });
  return result;
}

}  // namespace

void register_cluster_status(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* st = app.add_subcommand(
      "cluster-status",
      "Ask the coordinator for the members and their state (a table; --json: raw)");
  st->add_option("--config", *path, "Cluster TOML")->required();
  auto token_path = std::make_shared<std::string>();
  st->add_option("--token-file", *token_path,
                 "The cluster token file (default: SPINDLE_CLUSTER_TOKEN, else the TOML's "
                 "token_file, else ~/.local/state/spindle/clusters/NAME-HASH.token)");
  auto json = std::make_shared<bool>(false);
  st->add_flag("--json", *json, "Print the raw member list (JSON, with descriptors and bridges)");
  on_run(st, [path, token_path, json] {
    return ask_coordinator(*path, *token_path, [json](auto& self, const auto& coord, const auto& t) {
      return run_status(self, coord, t, *json);
    });
  });
  auto* leave = app.add_subcommand(
      "cluster-leave",
      "Ask a rank to leave the running cluster: its rows are re-placed on the others, then it "
      "stops (ranks that joined only)");
  auto leave_path = std::make_shared<std::string>();
  auto leave_token = std::make_shared<std::string>();
  auto rank = std::make_shared<int>(-1);
  leave->add_option("--config", *leave_path, "Cluster TOML")->required();
  leave->add_option("--rank", *rank, "The rank to leave (one that joined)")->required();
  leave->add_option("--token-file", *leave_token,
                    "The cluster token file (default: SPINDLE_CLUSTER_TOKEN, else the TOML's)");
  on_run(leave, [leave_path, leave_token, rank] {
    return ask_coordinator(*leave_path, *leave_token,
                           [rank](auto& self, const auto& coord, const auto& t) {
                             return run_leave(self, coord, t, *rank);
                           });
  });
}

}  // namespace spindle::apps
