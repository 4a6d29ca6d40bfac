#include "runtime/cluster_join.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "actors/node_actor.hpp"
#include "core/log.hpp"
#include "transport/rpc/endpoint.hpp"

namespace spindle::runtime {
namespace {

// Who answers at `at` when it is not rank 0: a member's node actor answers
// (status_atom) with its own line ("rank R (NAME, pid P)"); "" when none does.
std::string member_at(caf::actor_system& sys, const caf::actor& at) {
  caf::scoped_actor self{sys};
  std::string out;
  self->request(at, std::chrono::seconds(5), actors::status_atom::value)
      .receive(
          [&](const std::string& text) {
            const auto j = nlohmann::json::parse(text, nullptr, false);
            if (j.is_object() && j.contains("rank") && j["rank"].is_number_integer())
              out = fmt::format("rank {} ({}, pid {})", j["rank"].get<int>(),
                                j.value("name", std::string()).substr(0, 64), j.value("pid", 0));
          },
          [](caf::error&) {});
  return out;
}

// Rank 0's member list, as JSON, asked with the cluster token; a member reached
// instead of rank 0 is refused naming it and rank 0's address in the TOML.
expected<nlohmann::json> join_members_of(caf::actor_system& sys, const caf::actor& coord,
                                         const std::string& token, const std::string& at,
                                         const config::server_spec& rank0) {
  caf::scoped_actor self{sys};
  expected<nlohmann::json> out = make_error(errc::unavailable, "--join {}: no answer", at);
  std::string refused;
  self->request(coord, std::chrono::seconds(10), actors::status_atom::value, token)
      .receive([&](const std::string& text) { out = nlohmann::json::parse(text); },
               [&](caf::error& e) { refused = to_string(e); });
  if (refused.empty()) return out;
  if (const auto who = member_at(sys, coord); !who.empty())
    return make_error(errc::invalid_argument,
                      "--join {} reached {}, not rank 0: --join takes rank 0's address (the "
                      "TOML's first server, {}:{})",
                      at, who, rank0.host, rank0.port);
  return make_error(errc::unavailable, "--join {}: rank 0 refused the member list: {}", at,
                    refused);
}

// The rank to join as: --rank, else the lowest rank past the TOML's that no live
// member holds. That is past every live member, unless a joined rank died or left
// below a live one: the plan keeps its number (absent, with no rows: numbers name
// shards and regions), and the rank that joins takes it; the next plan gives it rows.
expected<int> join_rank_of(const nlohmann::json& members, const config::topology& topo, int asked) {
  std::set<int> live;
  for (const auto& m : members)
    if (m["alive"].get<bool>()) live.insert(m["rank"].get<int>());
  int next = int(topo.servers.size());
  while (live.count(next) > 0) ++next;
  for (const auto& m : members) {
    const int rank = m["rank"].get<int>();
    if (asked >= 0 && rank == asked && m["alive"].get<bool>())
      return make_error(errc::invalid_argument,
                        "--rank {}: rank {} is already a live member of the cluster ({}, pid {}); "
                        "leave --rank out to join as the next rank ({})",
                        asked, asked, m["name"].get<std::string>().substr(0, 64),
                        m["pid"].get<int>(), next);
  }
  if (asked >= 0 && asked < int(topo.servers.size()))
    return make_error(errc::invalid_argument,
                      "--rank {} with --join: rank {} is one of the TOML's {} ranks; start it "
                      "without --join, or leave --rank out to join as the next rank",
                      asked, asked, topo.servers.size());
  return asked >= 0 ? asked : next;
}

}  // namespace

expected<join_target> prepare_join(caf::actor_system& sys, const config::topology& topo,
                                   const node_args& a, const std::string& token) {
  SPINDLE_ASSIGN_OR_RETURN(auto at, transport::parse_host_port(a.join, "--join"));
  SPINDLE_ASSIGN_OR_RETURN(auto own, transport::parse_host_port(a.address, "--address"));
  if (own.port == 0) {  // announced with the port its gate then listens on
    auto port = free_port_on(own.host);
    if (!port) return make_error(errc::invalid_argument, "--address {}: {}", a.address,
                                 port.error().message());
    own.port = unsigned(*port);
  }
  config::server_spec coord;
  coord.name = "rank 0";
  coord.host = at.host;
  coord.port = int(at.port);
  join_target j;
  auto link = connect_gated(sys, coord, token, 10);
  if (!link)
    return make_error(errc::unavailable, "--join {}: {}", a.join, link.error().message());
  j.link = std::move(*link);
  SPINDLE_ASSIGN_OR_RETURN(auto members,
                           join_members_of(sys, j.link.actor, token, a.join, topo.servers.front()));
  SPINDLE_ASSIGN_OR_RETURN(j.rank, join_rank_of(members, topo, a.rank));
  j.me = topo.servers.back();  // placement reads the TOML's last server's tiers for it
  j.me.name = fmt::format("rank-{}", j.rank);
  j.me.host = own.host;
  j.me.port = int(own.port);
  j.me.door.clear();
  j.address = own.host.find(':') == std::string::npos
                  ? fmt::format("{}:{}", own.host, own.port)
                  : fmt::format("[{}]:{}", own.host, own.port);
  log::info("joining the cluster at {} as rank {} ({})", a.join, j.rank, j.address);
  return j;
}

}  // namespace spindle::runtime
