#include "runtime/plan_servers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "colocation/hera/colocation.hpp"
#include "colocation/hera/profile.hpp"
#include "config/colocation.hpp"
#include "core/text_file.hpp"
#include "runtime/cluster_link.hpp"

namespace spindle::runtime {
namespace {

// The `spindle serve` command line of one plan server.
std::vector<std::string> plan_server_argv(const std::string& exe, const std::string& listen,
                                          const std::string& token_file,
                                          const config::colocation_section& section,
                                          const std::vector<std::string>& models) {
  std::vector<std::string> argv = {exe,
                                   "serve",
                                   "--listen",
                                   listen,
                                   "--admin-token-file",
                                   token_file,
                                   "--node-manager",
                                   "hera",
                                   "--profiles",
                                   section.profiles,
                                   "--rec-workers",
                                   "1"};
  std::map<std::string, std::string> dirs;
  for (const auto& m : section.models) dirs[m.name] = m.dir;
  for (const auto& m : models) argv.insert(argv.end(), {"--rec-model", m + "=" + dirs[m]});
  return argv;
}

// The ranks of `topo` on this machine, in rank order.
std::vector<int> local_ranks(const config::topology& topo) {
  std::vector<int> local;
  for (std::size_t r = 0; r < topo.servers.size(); ++r)
    if (is_loopback(topo.servers[r].host)) local.push_back(int(r));
  return local;
}

}  // namespace

status launch_plan_servers(const std::string& exe, const config::topology& topo,
                           const std::string& path, const std::vector<bool>& doors,
                           std::vector<launched_rank>& ranks, plan_routes& routes) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "cluster config"));
  SPINDLE_ASSIGN_OR_RETURN(auto section, config::parse_colocation(text, path));
  if (!section) return status::ok();
  // Before: such a door was given --forward to 127.x addresses, its own host's.
  for (std::size_t r = 0; r < topo.servers.size() && r < doors.size(); ++r)
    if (doors[r] && !is_loopback(topo.servers[r].host))
      return make_error(errc::invalid_argument,
                        "{}: rank {} ({}) opens a door on {}, but the [colocation] plan servers "
                        "listen on this machine's loopback ranks, which {} cannot reach: run "
                        "the plan's cluster on one machine, or give rank {} no door",
                        path, r, topo.servers[r].name, topo.servers[r].host, topo.servers[r].host,
                        r);
  SPINDLE_ASSIGN_OR_RETURN(auto profiles, colocation::hera::load_profile_table(section->profiles));
  std::map<std::string, double> targets;
  for (const auto& m : section->models) targets[m.name] = m.qps;
  SPINDLE_ASSIGN_OR_RETURN(auto plan, colocation::hera::plan_cluster(profiles, targets));
  const auto local = local_ranks(topo);
  if (plan.servers.size() > local.size())
    return make_error(errc::invalid_argument,
                      "{}: the colocation plan needs {} servers; {} ranks run on this machine",
                      path, plan.servers.size(), local.size());
  for (std::size_t i = 0; i < plan.servers.size(); ++i) {
    const auto& sp = plan.servers[i];
    const int rank = local[i];
    fmt::print("[plan] server {} on rank {}: {} expected {} QPS, EMU {:.0f}%\n", i, rank,
               fmt::join(sp.models, " + "), fmt::join(sp.qps, " + "), 100 * sp.emu);
    // A port chosen now, kept across --restart: every door forwards there.
    const std::string& host = topo.servers[std::size_t(rank)].host;
    SPINDLE_ASSIGN_OR_RETURN(const int port, free_port_on(host));
    const std::string listen = fmt::format("{}:{}", host, port);
    for (const auto& m : sp.models) routes[m].push_back(listen);
    SPINDLE_TRY(spawn_rank(ranks, rank, fmt::format("rank {} hera", rank),
                           plan_server_argv(exe, listen, topo.token_file, *section, sp.models)));
  }
  return status::ok();
}

std::vector<std::string> forward_flags(const plan_routes& routes) {
  std::vector<std::string> forwards;
  for (const auto& [model, at] : routes)
    forwards.insert(forwards.end(), {"--forward", fmt::format("{}={}", model, fmt::join(at, ","))});
  return forwards;
}

}  // namespace spindle::runtime
