#include "features/placement.hpp"

#include <algorithm>
#include <array>

#include "core/enum_names.hpp"
#include "features/policies/policies.hpp"

namespace spindle::features {

using config::link_figures;
using config::link_kind;

constexpr enum_names<shard_tier, 3> kTiers{{{
    {shard_tier::device, "device"}, {shard_tier::host, "host"}, {shard_tier::disk, "disk"}}}};

std::string_view to_string(shard_tier t) { return kTiers.name(t); }

std::vector<shard_info> enumerate_shards(const config::topology& topo, std::uint64_t row_bytes) {
  std::vector<shard_info> out;
  for (std::size_t s = 0; s < topo.servers.size(); ++s) {
    const auto& srv = topo.servers[s];
    for (std::size_t d = 0; d < srv.devices.size(); ++d)
      out.push_back({int(s), int(d), shard_tier::device, srv.devices[d].memory_bytes / row_bytes});
  }
  for (std::size_t s = 0; s < topo.servers.size(); ++s)
    if (topo.servers[s].memory_bytes > 0)
      out.push_back({int(s), -1, shard_tier::host, topo.servers[s].memory_bytes / row_bytes});
  for (std::size_t s = 0; s < topo.servers.size(); ++s)
    if (topo.servers[s].disk_bytes > 0)
      out.push_back({int(s), -1, shard_tier::disk, topo.servers[s].disk_bytes / row_bytes});
  return out;
}

link_kind link_kind_to(const config::topology& topo, int server, int device,
                       const shard_info& shard) {
  if (shard.server != server)
    return shard.tier == shard_tier::disk ? link_kind::remote_disk : topo.inter;
  const auto& srv = topo.servers[server];
  bool reader_is_cuda = device >= 0 && srv.devices[device].kind == config::device_kind::cuda;
  switch (shard.tier) {
    case shard_tier::disk:
      return link_kind::disk;
    case shard_tier::host:
      if (device < 0) return link_kind::local;
      return reader_is_cuda ? link_kind::pcie : link_kind::shm;
    case shard_tier::device:
      break;
  }
  if (shard.device == device) return link_kind::local;
  if (device < 0)
    return srv.devices[shard.device].kind == config::device_kind::cuda ? link_kind::pcie
                                                                       : link_kind::shm;
  if (srv.devices[shard.device].numa == srv.devices[device].numa) return topo.intra;
  return link_kind::upi;
}

link_figures link_to(const config::topology& topo, int server, int device,
                     const shard_info& shard) {
  return topo.figures(link_kind_to(topo, server, device, shard));
}

std::vector<std::uint64_t> placement_plan::shard_rows() const {
  std::vector<std::uint64_t> out(shards.size(), 0);
  for (std::size_t c = 0; c < lookup.num_classes(); ++c)
    for (const auto& o : lookup.class_owners(c)) out[o.shard] += lookup.class_rows(c).size();
  return out;
}

std::vector<std::int32_t> home_servers(const placement_plan& plan) {
  std::vector<std::int32_t> home(plan.lookup.num_nodes(), -1);
  for (std::uint64_t v = 0; v < home.size(); ++v) {
    std::int32_t h = -1;
    for (const auto& o : plan.lookup.locate(v).owners) {
      const int server = plan.shards[o.shard].server;
      if (h >= 0 && h != server) {
        h = -1;
        break;
      }
      h = server;
    }
    home[v] = h;
  }
  return home;
}

double surviving_fap_share(const placement_plan& plan, std::span<const double> fap) {
  const auto home = home_servers(plan);
  std::vector<double> alone(
      plan.shards.empty()
          ? 0
          : 1 + std::max_element(plan.shards.begin(), plan.shards.end(),
                                 [](const auto& a, const auto& b) { return a.server < b.server; })
                    ->server,
      0.0);
  double total = 0;
  for (std::uint64_t v = 0; v < home.size() && v < fap.size(); ++v) {
    total += fap[v];
    if (home[v] >= 0) alone[std::size_t(home[v])] += fap[v];
  }
  if (total <= 0) return 1.0;
  const double worst = alone.empty() ? 0.0 : *std::max_element(alone.begin(), alone.end());
  return 1.0 - worst / total;
}

std::vector<reader_site> reader_sites(const config::topology& topo) {
  std::vector<reader_site> out;
  for (std::size_t s = 0; s < topo.servers.size(); ++s) {
    if (topo.servers[s].devices.empty()) out.push_back({int(s), -1});
    for (std::size_t d = 0; d < topo.servers[s].devices.size(); ++d)
      out.push_back({int(s), int(d)});
  }
  return out;
}

std::vector<link_kind> nearest_links(const config::topology& topo, const placement_plan& plan,
                                     const reader_site& r) {
  std::vector<link_kind> out(plan.lookup.num_classes(), link_kind::local);
  for (std::size_t c = 0; c < out.size(); ++c) {
    double best = 1e300;
    for (const auto& o : plan.lookup.class_owners(c)) {
      const shard_info& sh = plan.shards[o.shard];
      double cost = link_to(topo, r.server, r.device, sh).cost_us(double(plan.row_bytes));
      if (cost < best) best = cost, out[c] = link_kind_to(topo, r.server, r.device, sh);
    }
  }
  return out;
}

double expected_latency_us(const config::topology& topo, const placement_plan& plan,
                           std::span<const double> fap, std::size_t batch) {
  std::vector<double> mass(plan.lookup.num_classes(), 0.0);
  for (std::uint64_t v = 0; v < plan.lookup.num_nodes(); ++v)
    mass[plan.lookup.class_of(v)] += fap[v];
  auto readers = reader_sites(topo);
  double sum = 0;
  for (const auto& r : readers) {
    std::array<double, config::kLinkKinds> bytes{};
    auto links = nearest_links(topo, plan, r);
    for (std::size_t c = 0; c < links.size(); ++c)
      bytes[int(links[c])] += mass[c] * double(batch) * double(plan.row_bytes);
    double worst = 0;
    for (int k = 0; k < config::kLinkKinds; ++k)
      if (bytes[k] > 0) worst = std::max(worst, topo.figures(link_kind(k)).cost_us(bytes[k]));
    sum += worst;
  }
  return sum / double(readers.size());
}

std::vector<std::string_view> policy_names() { return {"fap", "hash", "degree", "random"}; }

expected<std::unique_ptr<placement_policy>> make_policy(std::string_view name) {
  if (name == "fap") return make_fap_policy();
  if (name == "hash") return make_hash_policy();
  if (name == "degree") return make_degree_policy();
  if (name == "random") return make_random_policy();
  return make_error(errc::invalid_argument,
                    "placement policy '{}': expected fap, hash, degree or random", name);
}

}  // namespace spindle::features
