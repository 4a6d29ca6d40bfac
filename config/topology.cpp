#include "config/topology.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/text_file.hpp"

namespace spindle::config {
namespace {

constexpr std::array<std::string_view, kLinkKinds> kLinkNames = {
    "local", "nvlink", "pcie", "shm", "upi", "infiniband", "ethernet", "disk", "remote_disk"};

status reject_unknown_keys(const toml::table& t, std::initializer_list<std::string_view> known,
                           std::string_view where) {
  for (auto&& [key, _] : t) {
    bool ok = false;
    for (auto k : known) ok = ok || key.str() == k;
    if (!ok) return make_error(errc::invalid_argument, "{}: unknown field '{}'", where, key.str());
  }
  return status::ok();
}

expected<std::uint64_t> size_field(const toml::node_view<const toml::node>& node,
                                   std::string_view where) {
  if (auto i = node.value<std::int64_t>()) {
    if (*i < 0) return make_error(errc::invalid_argument, "{} = {} is negative", where, *i);
    return static_cast<std::uint64_t>(*i);
  }
  if (auto s = node.value<std::string>()) {
    auto v = parse_size(*s);
    if (!v) return std::move(v).error().with_context(fmt::format("{}: ", where));
    return v;
  }
  return make_error(errc::invalid_argument, "{}: expected a size like \"16GiB\"", where);
}

template <class T>
expected<T> typed_field(const toml::table& t, std::string_view key, T fallback,
                        std::string_view where) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (auto v = n->value<T>()) return *v;
  return make_error(errc::invalid_argument, "{}.{}: wrong type", where, key);
}

expected<std::vector<device_spec>> parse_device(const toml::table& t, const std::string& where) {
  SPINDLE_TRY(reject_unknown_keys(t, {"kind", "memory", "numa", "count"}, where));
  device_spec d;
  SPINDLE_ASSIGN_OR_RETURN(auto kind, typed_field<std::string>(t, "kind", "process", where));
  if (kind == "cuda")
    d.kind = device_kind::cuda;
  else if (kind == "process")
    d.kind = device_kind::process;
  else
    return make_error(errc::invalid_argument, "{}.kind = '{}': expected cuda or process", where,
                      kind);
  SPINDLE_ASSIGN_OR_RETURN(d.memory_bytes, size_field(t["memory"], where + ".memory"));
  SPINDLE_ASSIGN_OR_RETURN(auto numa, typed_field<std::int64_t>(t, "numa", 0, where));
  SPINDLE_ASSIGN_OR_RETURN(auto count, typed_field<std::int64_t>(t, "count", 1, where));
  if (count < 1 || count > 1024)
    return make_error(errc::invalid_argument, "{}.count = {}: expected 1..1024", where, count);
  d.numa = static_cast<int>(numa);
  return std::vector<device_spec>(static_cast<std::size_t>(count), d);
}

expected<std::vector<server_spec>> parse_server(const toml::table& t, const std::string& where) {
  SPINDLE_TRY(reject_unknown_keys(t,
                                  {"name", "host", "port", "memory", "disk", "numa_groups",
                                   "device", "replicas", "door", "http", "grpc", "metrics"},
                                  where));
  server_spec s;
  SPINDLE_ASSIGN_OR_RETURN(s.name, typed_field<std::string>(t, "name", "", where));
  SPINDLE_ASSIGN_OR_RETURN(s.host, typed_field<std::string>(t, "host", "127.0.0.1", where));
  for (auto [key, field] : {std::pair<const char*, std::string*>{"door", &s.door},
                            {"http", &s.http},
                            {"grpc", &s.grpc},
                            {"metrics", &s.metrics}}) {
    SPINDLE_ASSIGN_OR_RETURN(*field, typed_field<std::string>(t, key, std::string(), where));
    if (!field->empty() && field->rfind(':') == std::string::npos)
      return make_error(errc::invalid_argument, "{}.{} = '{}': expected HOST:PORT", where, key,
                        *field);
  }
  SPINDLE_ASSIGN_OR_RETURN(auto port, typed_field<std::int64_t>(t, "port", 0, where));
  SPINDLE_ASSIGN_OR_RETURN(auto groups, typed_field<std::int64_t>(t, "numa_groups", 1, where));
  SPINDLE_ASSIGN_OR_RETURN(auto replicas, typed_field<std::int64_t>(t, "replicas", 1, where));
  s.port = static_cast<int>(port);
  s.numa_groups = static_cast<int>(groups);
  if (t.contains("memory")) {
    SPINDLE_ASSIGN_OR_RETURN(s.memory_bytes, size_field(t["memory"], where + ".memory"));
  }
  if (t.contains("disk")) {
    SPINDLE_ASSIGN_OR_RETURN(s.disk_bytes, size_field(t["disk"], where + ".disk"));
  }
  if (const toml::array* devices = t["device"].as_array()) {
    for (std::size_t i = 0; i < devices->size(); ++i) {
      const toml::table* dt = (*devices)[i].as_table();
      std::string dwhere = fmt::format("{}.device[{}]", where, i);
      if (!dt) return make_error(errc::invalid_argument, "{}: expected a table", dwhere);
      SPINDLE_ASSIGN_OR_RETURN(auto ds, parse_device(*dt, dwhere));
      s.devices.insert(s.devices.end(), ds.begin(), ds.end());
    }
  }
  if (replicas < 1 || replicas > 4096)
    return make_error(errc::invalid_argument, "{}.replicas = {}: expected 1..4096", where,
                      replicas);
  if (replicas == 1) return std::vector<server_spec>{s};
  std::vector<server_spec> out;
  for (int i = 0; i < replicas; ++i) {
    server_spec copy = s;
    copy.name = fmt::format("{}-{}", s.name, i);
    if (s.port != 0) copy.port = s.port + i;
    out.push_back(std::move(copy));
  }
  return out;
}

status parse_links(const toml::table& t, topology& topo, std::string_view origin) {
  std::string where = fmt::format("{}: links", origin);
  std::vector<std::string_view> known = {"intra", "inter"};
  for (int k = 0; k < kConfigurableLinks; ++k) known.push_back(kLinkNames[k]);
  for (auto&& [key, node] : t) {
    bool ok = false;
    for (auto k : known) ok = ok || key.str() == k;
    if (!ok) return make_error(errc::invalid_argument, "{}: unknown field '{}'", where, key.str());
  }
  SPINDLE_ASSIGN_OR_RETURN(auto intra, typed_field<std::string>(t, "intra", "pcie", where));
  SPINDLE_ASSIGN_OR_RETURN(auto inter, typed_field<std::string>(t, "inter", "ethernet", where));
  // The link names' errors name the file and field (links.intra = 'nvlnk': ...).
  auto intra_kind = parse_link_kind(intra);
  if (!intra_kind) return std::move(intra_kind).error().with_context(where + ".intra: ");
  auto inter_kind = parse_link_kind(inter);
  if (!inter_kind) return std::move(inter_kind).error().with_context(where + ".inter: ");
  topo.intra = *intra_kind, topo.inter = *inter_kind;
  for (int k = 0; k < kConfigurableLinks; ++k) {
    const toml::table* lt = t[kLinkNames[k]].as_table();
    if (!lt) continue;
    std::string lwhere = fmt::format("{}.{}", where, kLinkNames[k]);
    SPINDLE_TRY(reject_unknown_keys(*lt, {"bandwidth_gbs", "latency_us"}, lwhere));
    auto& f = topo.links[k];
    SPINDLE_ASSIGN_OR_RETURN(f.bandwidth_gbs,
                             typed_field<double>(*lt, "bandwidth_gbs", f.bandwidth_gbs, lwhere));
    SPINDLE_ASSIGN_OR_RETURN(f.latency_us,
                             typed_field<double>(*lt, "latency_us", f.latency_us, lwhere));
  }
  return status::ok();
}

status parse_placement(const toml::table& t, topology& topo, std::string_view origin) {
  const std::string where = fmt::format("{}: placement", origin);
  SPINDLE_TRY(reject_unknown_keys(t, {"min_replicas", "replica_fap_share"}, where));
  SPINDLE_ASSIGN_OR_RETURN(auto copies, typed_field<std::int64_t>(t, "min_replicas", 1, where));
  SPINDLE_ASSIGN_OR_RETURN(auto share, typed_field<double>(t, "replica_fap_share", 0.0, where));
  if (copies < 1 || copies > 64)
    return make_error(errc::invalid_argument, "{}.min_replicas = {}: expected 1..64", where,
                      copies);
  if (!(share >= 0.0 && share <= 1.0))
    return make_error(errc::invalid_argument, "{}.replica_fap_share = {}: expected 0..1", where,
                      share);
  topo.placement = {int(copies), share};
  return status::ok();
}

expected<topology> build_topology(const toml::table& root, std::string_view origin) {
  topology topo;
  for (int k = 0; k < kLinkKinds; ++k) topo.links[k] = default_link_figures(link_kind(k));
  SPINDLE_TRY(reject_unknown_keys(
      root, {"coordinator", "links", "placement", "server", "token_file", "colocation", "launcher"},
      origin));
  SPINDLE_ASSIGN_OR_RETURN(topo.launcher,
                           typed_field<std::string>(root, "launcher", topo.launcher, origin));
  if (const toml::table* p = root["placement"].as_table())
    SPINDLE_TRY(parse_placement(*p, topo, origin));
  SPINDLE_ASSIGN_OR_RETURN(topo.token_file,
                           typed_field<std::string>(root, "token_file", std::string(), origin));
  if (const toml::table* links = root["links"].as_table()) {
    SPINDLE_TRY(parse_links(*links, topo, origin));
  }
  const toml::array* servers = root["server"].as_array();
  if (!servers || servers->empty())
    return make_error(errc::invalid_argument, "{}: no [[server]] entries", origin);
  for (std::size_t i = 0; i < servers->size(); ++i) {
    std::string where = fmt::format("{}: server[{}]", origin, i);
    const toml::table* st = (*servers)[i].as_table();
    if (!st) return make_error(errc::invalid_argument, "{}: expected a table", where);
    SPINDLE_ASSIGN_OR_RETURN(auto ss, parse_server(*st, where));
    topo.servers.insert(topo.servers.end(), ss.begin(), ss.end());
  }
  SPINDLE_ASSIGN_OR_RETURN(
      topo.coordinator,
      typed_field<std::string>(root, "coordinator", topo.servers[0].name, origin));
  if (auto st = validate(topo); !st) return std::move(st).with_context(fmt::format("{}: ", origin));
  return topo;
}

}  // namespace

std::string_view to_string(link_kind k) { return kLinkNames[static_cast<int>(k)]; }

expected<link_kind> parse_link_kind(std::string_view text) {
  for (int k = 0; k < kConfigurableLinks; ++k)
    if (kLinkNames[k] == text) return link_kind(k);
  return make_error(
      errc::invalid_argument,
      "link '{}': expected local, nvlink, pcie, shm, upi, infiniband, ethernet or disk", text);
}

link_figures default_link_figures(link_kind k) {
  // Bandwidths: Quiver §2/§5.2 (NVLink 600 GB/s and 50x PCIe; InfiniBand
  // 800 Gbps; Ethernet 10 Gbps; SSD ~ Ethernet). Latencies (not in the paper):
  // typical one-sided read latencies of each medium. In link_kind's order.
  constexpr std::array<link_figures, kLinkKinds> kDefaults = {{
      {900.0, 0.5},   // local
      {600.0, 1.0},   // nvlink
      {12.0, 2.0},    // pcie
      {12.0, 1.0},    // shm
      {10.0, 3.0},    // upi
      {100.0, 4.0},   // infiniband
      {1.25, 50.0},   // ethernet
      {1.25, 100.0},  // disk
      {1.25, 150.0},  // remote_disk: ethernet + disk; see figures()
  }};
  const auto i = static_cast<std::size_t>(k);
  return i < kDefaults.size() ? kDefaults[i] : link_figures{};
}

link_figures topology::figures(link_kind k) const {
  if (k != link_kind::remote_disk) return links[static_cast<int>(k)];
  const link_figures& net = links[static_cast<int>(inter)];
  const link_figures& disk = links[static_cast<int>(link_kind::disk)];
  return {std::min(net.bandwidth_gbs, disk.bandwidth_gbs), net.latency_us + disk.latency_us};
}

std::string_view to_string(device_kind k) { return k == device_kind::cuda ? "cuda" : "process"; }

std::size_t topology::device_count() const {
  std::size_t n = 0;
  for (const auto& s : servers) n += s.devices.size();
  return n;
}

topology topology::with_server_count(int n) const {
  topology t = *this;
  t.servers.clear();
  for (int i = 0; i < n; ++i) {
    server_spec s = servers.front();
    s.name = fmt::format("s{}", i);
    if (s.port != 0) s.port += i;
    t.servers.push_back(std::move(s));
  }
  t.coordinator = t.servers.front().name;
  return t;
}

expected<topology> parse_topology(std::string_view toml_text, std::string_view origin) {
  try {
    toml::table root = toml::parse(toml_text, origin);
    return build_topology(root, origin);
  } catch (const toml::parse_error& e) {
    return make_error(errc::invalid_argument, "{}:{}:{}: {}", origin, e.source().begin.line,
                      e.source().begin.column, e.description());
  }
}

std::string default_token_file(const std::string& toml_path) {
  std::string state;
  if (const char* d = std::getenv("SPINDLE_STATE_DIR"); d && *d) {
    state = d;
  } else if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) {
    state = std::string(x) + "/spindle";
  } else {
    const char* home = std::getenv("HOME");
    state = std::string(home && *home ? home : "/tmp") + "/.local/state/spindle";
  }
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(toml_path, ec);
  const std::string full = ec ? toml_path : abs.string();
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across runs and hosts
  for (unsigned char c : full) h = (h ^ c) * 1099511628211ull;
  std::string stem = std::filesystem::path(toml_path).filename().string();
  if (stem.size() > 5 && stem.ends_with(".toml")) stem.resize(stem.size() - 5);
  return fmt::format("{}/clusters/{}-{:08x}.token", state, stem, std::uint32_t(h ^ (h >> 32)));
}

expected<topology> load_topology(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "topology file"));
  SPINDLE_ASSIGN_OR_RETURN(auto topo, parse_topology(text, path));
  if (topo.token_file.empty()) {
    topo.token_file = default_token_file(path);
  } else if (topo.token_file.front() != '/') {
    const auto slash = path.rfind('/');
    topo.token_file =
        (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + topo.token_file;
  }
  return topo;
}

expected<server_spec> node_server(const topology& t, int rank) {
  if (rank < 0 || std::size_t(rank) >= t.servers.size())
    return make_error(errc::invalid_argument, "--rank {}: the cluster has ranks 0..{}", rank,
                      t.servers.size() - 1);
  if (t.servers[std::size_t(rank)].port == 0)
    return make_error(errc::invalid_argument, "server[{}] ('{}'): a node needs a port", rank,
                      t.servers[std::size_t(rank)].name);
  return t.servers[std::size_t(rank)];
}

}  // namespace spindle::config
