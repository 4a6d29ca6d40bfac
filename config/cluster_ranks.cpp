#include "config/cluster_ranks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace spindle::config {

std::string to_string(const plan_ranks& r) {
  const auto absent = r.absent_ranks();
  if (absent.empty()) return fmt::format("{} ranks", r.count);
  return fmt::format("{} ranks, {} absent", r.count, fmt::join(absent, ", "));
}

topology with_ranks(const topology& toml, plan_ranks ranks, const std::string& host) {
  if (toml.servers.empty()) return toml;
  const int count = ranks.count > 0 ? ranks.count : int(toml.servers.size());
  if (std::size_t(count) == toml.servers.size() && ranks.absent == 0) return toml;
  topology t = toml;
  const server_spec last = toml.servers.back();
  t.servers.resize(std::min<std::size_t>(t.servers.size(), std::size_t(count)));
  for (int r = int(t.servers.size()); r < count; ++r) {
    server_spec s = last;
    s.name = fmt::format("rank-{}", r);
    s.host = host;
    s.port = 0;
    s.door.clear();
    s.http.clear();
    s.grpc.clear();
    s.metrics.clear();
    t.servers.push_back(std::move(s));
  }
  for (int r = 0; r < count; ++r)
    if (ranks.is_absent(r)) {
      t.servers[std::size_t(r)].memory_bytes = 0;
      t.servers[std::size_t(r)].disk_bytes = 0;
      t.servers[std::size_t(r)].devices.clear();
      t.servers[std::size_t(r)].absent = true;
    }
  return t;
}

}  // namespace spindle::config
