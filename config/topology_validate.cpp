#include <cctype>
#include <charconv>
#include <set>

#include "config/topology.hpp"

namespace spindle::config {
namespace {

status validate_links(const topology& t) {
  if (t.intra != link_kind::nvlink && t.intra != link_kind::pcie && t.intra != link_kind::shm)
    return make_error(errc::invalid_argument, "links.intra = '{}': expected nvlink, pcie or shm",
                      to_string(t.intra));
  if (t.inter != link_kind::infiniband && t.inter != link_kind::ethernet)
    return make_error(errc::invalid_argument, "links.inter = '{}': expected infiniband or ethernet",
                      to_string(t.inter));
  for (int k = 0; k < kConfigurableLinks; ++k) {
    const auto& f = t.links[k];
    if (!(f.bandwidth_gbs > 0))
      return make_error(errc::invalid_argument, "links.{}.bandwidth_gbs = {}: must be > 0",
                        to_string(link_kind(k)), f.bandwidth_gbs);
    if (!(f.latency_us >= 0))
      return make_error(errc::invalid_argument, "links.{}.latency_us = {}: must be >= 0",
                        to_string(link_kind(k)), f.latency_us);
  }
  return status::ok();
}

status validate_server(const server_spec& s, std::size_t i) {
  std::string where = fmt::format("server[{}] ('{}')", i, s.name);
  if (s.name.empty()) return make_error(errc::invalid_argument, "server[{}].name is empty", i);
  if (s.port < 0 || s.port > 65535)
    return make_error(errc::invalid_argument, "{}.port = {}: expected 0..65535", where, s.port);
  if (s.numa_groups < 1)
    return make_error(errc::invalid_argument, "{}.numa_groups = {}: must be >= 1", where,
                      s.numa_groups);
  if (!s.devices.empty() && static_cast<std::size_t>(s.numa_groups) > s.devices.size())
    return make_error(errc::invalid_argument,
                      "{}.numa_groups = {} is larger than the server's {} devices", where,
                      s.numa_groups, s.devices.size());
  std::vector<int> per_group(s.numa_groups, 0);
  for (std::size_t d = 0; d < s.devices.size(); ++d) {
    const auto& dev = s.devices[d];
    if (dev.numa < 0 || dev.numa >= s.numa_groups)
      return make_error(errc::invalid_argument, "{}.device[{}].numa = {}: expected 0..{}", where, d,
                        dev.numa, s.numa_groups - 1);
    ++per_group[dev.numa];
  }
  for (int g = 0; g < s.numa_groups && !s.devices.empty(); ++g)
    if (per_group[g] == 0)
      return make_error(errc::invalid_argument, "{}: NUMA group {} has no devices", where, g);
  if (s.devices.empty() && s.memory_bytes == 0)
    return make_error(errc::invalid_argument, "{}: no devices and memory = 0: holds no rows",
                      where);
  return status::ok();
}

}  // namespace

status validate(const topology& t) {
  if (t.servers.empty()) return make_error(errc::invalid_argument, "topology has no servers");
  SPINDLE_TRY(validate_links(t));
  std::set<std::string> names;
  std::set<std::pair<std::string, int>> endpoints;
  for (std::size_t i = 0; i < t.servers.size(); ++i) {
    const auto& s = t.servers[i];
    SPINDLE_TRY(validate_server(s, i));
    if (!names.insert(s.name).second)
      return make_error(errc::invalid_argument, "server[{}].name = '{}' is used twice", i, s.name);
    if (s.port != 0 && !endpoints.insert({s.host, s.port}).second)
      return make_error(errc::invalid_argument, "server[{}]: {}:{} is used twice", i, s.host,
                        s.port);
  }
  if (!names.count(t.coordinator))
    return make_error(errc::invalid_argument, "coordinator = '{}': unknown server", t.coordinator);
  return status::ok();
}

expected<std::uint64_t> parse_size(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  double value = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || value < 0)
    return make_error(errc::invalid_argument, "size '{}': expected a number and a unit (GiB)",
                      text);
  std::string_view unit(p, s.data() + s.size() - p);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  struct entry {
    std::string_view name;
    double scale;
  };
  static constexpr entry units[] = {{"", 1},
                                    {"B", 1},
                                    {"KiB", 1024.0},
                                    {"MiB", 1048576.0},
                                    {"GiB", 1073741824.0},
                                    {"TiB", 1099511627776.0},
                                    {"KB", 1e3},
                                    {"MB", 1e6},
                                    {"GB", 1e9},
                                    {"TB", 1e12}};
  for (const auto& u : units) {
    if (u.name != unit) continue;
    const double bytes = value * u.scale;
    if (!(bytes < 0x1p64))  // also NaN and inf: converting would be undefined
      return make_error(errc::invalid_argument, "size '{}': larger than 16 EiB", text);
    return static_cast<std::uint64_t>(bytes);
  }
  return make_error(errc::invalid_argument,
                    "size '{}': unknown unit '{}' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", text,
                    unit);
}

}  // namespace spindle::config
