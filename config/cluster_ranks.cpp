#include "config/cluster_ranks.hpp"

#include <fmt/format.h>

namespace spindle::config {

topology with_ranks(const topology& toml, int ranks, const std::string& host) {
  if (ranks <= 0 || std::size_t(ranks) == toml.servers.size() || toml.servers.empty()) return toml;
  topology t = toml;
  const server_spec last = toml.servers.back();
  t.servers.resize(std::min<std::size_t>(t.servers.size(), std::size_t(ranks)));
  for (int r = int(t.servers.size()); r < ranks; ++r) {
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
  return t;
}

}  // namespace spindle::config
