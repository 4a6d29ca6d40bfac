// A deployment's topology: servers, their devices and NUMA groups, the links
// between devices and servers with bandwidth/latency figures, and a disk tier.
// Parsed from TOML into validated plain values; safe to share read-only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::config {

/// Kinds of link a feature read can cross. The placement evaluator charges a
/// read by the link between the reader's device and the shard that holds it.
/// remote_disk is derived (the network, then another server's disk): it has no
/// figures of its own in TOML.
enum class link_kind { local, nvlink, pcie, shm, upi, infiniband, ethernet, disk, remote_disk };
inline constexpr int kLinkKinds = 9;
inline constexpr int kConfigurableLinks = 8;  // all but remote_disk
std::string_view to_string(link_kind k);
expected<link_kind> parse_link_kind(std::string_view text);

/// Bandwidth in GB/s (1e9 bytes) and one-way latency in microseconds.
struct link_figures {
  double bandwidth_gbs = 0;
  double latency_us = 0;
  /// Microseconds to move `bytes` over this link in one batched read.
  double cost_us(double bytes) const { return latency_us + bytes / (bandwidth_gbs * 1e3); }
};

/// Defaults from the Quiver paper (§2, §5.2): NVLink 600 GB/s, PCIe 50x slower,
/// InfiniBand 800 Gbps, 10 Gbps Ethernet and SSDs 80x slower than InfiniBand.
/// Latencies are not in the paper; ours are typical figures (see README).
link_figures default_link_figures(link_kind k);

enum class device_kind { cuda, process };
std::string_view to_string(device_kind k);

/// One place that holds feature rows inside a server: a CUDA device, or (on a
/// host-only deployment) one serving process's own memory.
struct device_spec {
  device_kind kind = device_kind::process;
  std::uint64_t memory_bytes = 0;  // budget for feature rows
  int numa = 0;                    // NUMA group index within the server
};

struct server_spec {
  std::string name;
  std::string host = "127.0.0.1";
  int port = 0;
  std::uint64_t memory_bytes = 0;  // host-memory budget for feature rows (server-wide)
  std::uint64_t disk_bytes = 0;    // disk tier budget; 0 = no disk tier
  int numa_groups = 1;
  std::vector<device_spec> devices;
  /// TOML `door = "HOST:PORT"`: under `spindle launch`, this rank opens a front
  /// door there (rank 0's is launch's --listen); empty: none.
  std::string door;
  /// TOML `http`, `grpc`, `metrics` = "HOST:PORT" (port 0: a free one): under
  /// `spindle launch`, this rank's door also speaks KServe v2 over HTTP/REST and
  /// gRPC and serves Prometheus metrics there (rank 0: unless launch's own flag).
  std::string http, grpc, metrics;
  /// A rank a running cluster plans with no rows (config::plan_ranks): it has
  /// no memory, disk or devices, and placement spreads copies over the others.
  bool absent = false;
};

/// The whole deployment. `intra` is how devices of one NUMA group reach each
/// other (nvlink, pcie or shm); `inter` is how servers reach each other.
/// [placement] of a cluster TOML: how the FAP placement guards against losing
/// a server. The hottest rows, in FAP order until `replica_fap_share` of the
/// FAP mass, get copies on at least `min_replicas` distinct servers, so that
/// share of the accesses survives any one server's loss.
struct placement_settings {
  int min_replicas = 1;            // 1: no extra copies beyond what the latency model picks
  double replica_fap_share = 0.0;  // share of the FAP mass to protect, in [0, 1]
};

struct topology {
  std::vector<server_spec> servers;
  std::string coordinator;  // name of the rank-0 server
  link_kind intra = link_kind::pcie;
  link_kind inter = link_kind::ethernet;
  std::array<link_figures, kLinkKinds> links{};
  /// The cluster's shared secret: members send it to join, `cluster-status`
  /// to read the members. TOML `token_file` (relative to the TOML's folder);
  /// default: default_token_file(path), created by rank 0 or launch (mode 0600).
  std::string token_file;
  /// How `spindle launch` starts a rank on another host: a command prefix with
  /// {host} and {rank} (TOML `launcher`; default "ssh {host}"), followed by the
  /// rank's `spindle node` command line. Ranks on 127.0.0.1, localhost or ::1
  /// are started directly.
  std::string launcher = "ssh {host}";
  placement_settings placement;

  /// Figures of a link; remote_disk adds the network's latency to the disk's
  /// and takes the lower bandwidth.
  link_figures figures(link_kind k) const;
  /// True when devices of one NUMA group read each other's rows cheaply (NVLink,
  /// or shared memory between processes), so Quiver partitions instead of replicating.
  bool peer_links() const { return intra == link_kind::nvlink || intra == link_kind::shm; }
  /// True when servers read each other's rows over RDMA (InfiniBand).
  bool fast_network() const { return inter == link_kind::infiniband; }
  std::size_t device_count() const;
  /// A copy whose servers are `n` copies of server 0 (names s0..s{n-1}, ports
  /// port+i): how benchmarks simulate clusters larger than an example file.
  topology with_server_count(int n) const;
};

/// Parses and validates TOML text; `origin` names the file in error messages.
expected<topology> parse_topology(std::string_view toml_text, std::string_view origin);
/// Reads and parses a topology file.
expected<topology> load_topology(const std::string& path);

/// Where a cluster's token lives when its TOML names no token_file: with the
/// user's state, not beside the TOML (which may sit in a source tree):
/// $SPINDLE_STATE_DIR, else $XDG_STATE_HOME/spindle, else ~/.local/state/spindle,
/// then clusters/STEM-HASH.token (STEM: the TOML's file name without .toml;
/// HASH: of its absolute path, so two clusters' files of one name differ).
std::string default_token_file(const std::string& toml_path);
/// Checks a topology built in code; errors name the field ("server[1].device[0].numa").
status validate(const topology& t);

/// The server that rank `rank` runs as a cluster process: refused by name when
/// the rank is outside the topology or its server has no port.
expected<server_spec> node_server(const topology& t, int rank);

/// Parses "16GiB", "512 MiB", "2GB", "4096" (bytes). Errors name the value.
expected<std::uint64_t> parse_size(std::string_view text);

}  // namespace spindle::config
