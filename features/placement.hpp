// Feature placement: which shards (device memory, server memory, disk) hold each
// node's feature row, as a plan plus Quiver's feature lookup table. Policies:
// Quiver's FAP + topology algorithm (§5.2) and the baselines it is compared with
// (hash, degree caching, random). Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/topology.hpp"
#include "core/status.hpp"
#include "features/feature_lookup.hpp"

namespace spindle::features {

enum class shard_tier { device, host, disk };
std::string_view to_string(shard_tier t);

/// One storage unit: a device's memory, a server's host memory or its disk.
struct shard_info {
  int server = 0;
  int device = -1;  // index into server.devices for tier device; -1 otherwise
  shard_tier tier = shard_tier::host;
  std::uint64_t capacity_rows = 0;
};

/// The shards of a topology for rows of `row_bytes`: every device, then each
/// server's host memory (when > 0), then its disk (when > 0).
std::vector<shard_info> enumerate_shards(const config::topology& topo, std::uint64_t row_bytes);

/// The link a reader on (server, device) crosses to read a row from `shard`;
/// device -1 is a reader in the server's host process. Another server's disk is
/// the composite link remote_disk.
config::link_figures link_to(const config::topology& topo, int server, int device,
                             const shard_info& shard);
/// The dominant link kind of that path (for per-link statistics).
config::link_kind link_kind_to(const config::topology& topo, int server, int device,
                               const shard_info& shard);

struct placement_input {
  std::span<const double> fap;           // [N] expected accesses per request (graph/metrics)
  std::span<const std::int64_t> degree;  // [N] in-degree, used by the degree baseline
  std::uint64_t row_bytes = 0;           // bytes of one feature row
  std::uint64_t seed = 1;                // for the random and hash baselines
  std::size_t batch_hint = 64;           // seeds per request, for the FAP policy's latency model
  /// [N] or empty: the server that holds each node's row in the plan being
  /// replaced (-1: none or several). The FAP policy keeps a partitioned row there
  /// when that costs the balance at most the row's own FAP (a re-plan then moves
  /// only the rows it must).
  std::span<const std::int32_t> previous_server;
};

struct placement_plan {
  std::string policy;
  std::uint64_t row_bytes = 0;
  std::vector<shard_info> shards;
  feature_lookup lookup;
  std::uint64_t replicated_rows = 0;  // nodes held by more than one shard

  /// Rows each shard holds (its layout length).
  std::vector<std::uint64_t> shard_rows() const;
};

/// Each node's single home server in `plan` (-1 when it is held by several
/// servers or none): placement_input::previous_server of a re-plan.
std::vector<std::int32_t> home_servers(const placement_plan& plan);

/// The share of the FAP mass still readable after losing any one server: 1 minus
/// the largest FAP mass held by a single server alone (rows on several servers
/// survive). What `place` reports against [placement] replica_fap_share.
double surviving_fap_share(const placement_plan& plan, std::span<const double> fap);

/// Where requests are served: every device (a server with none: its host process).
struct reader_site {
  int server = 0;
  int device = -1;
};
std::vector<reader_site> reader_sites(const config::topology& topo);

/// For a reader: per owner class of `plan`, the link to its nearest owner.
std::vector<config::link_kind> nearest_links(const config::topology& topo,
                                             const placement_plan& plan, const reader_site& r);

/// The link model's expected aggregation latency of a request of `batch` seeds,
/// averaged over readers: per link, latency + FAP-weighted bytes / bandwidth;
/// the request waits for the slowest link (Quiver's "last feature").
double expected_latency_us(const config::topology& topo, const placement_plan& plan,
                           std::span<const double> fap, std::size_t batch);

/// A placement policy: same inputs, same output shape, so plans compare directly.
class placement_policy {
 public:
  virtual ~placement_policy() = default;
  virtual std::string_view name() const = 0;
  /// Places every node at least once within shard capacities, or fails with
  /// errc::resource_exhausted naming the capacity that is short.
  virtual expected<placement_plan> place(const config::topology& topo,
                                         const placement_input& in) const = 0;
};

/// "fap" | "hash" | "degree" | "random"; errors list the valid names.
expected<std::unique_ptr<placement_policy>> make_policy(std::string_view name);
/// The valid policy names, for --help.
std::vector<std::string_view> policy_names();

}  // namespace spindle::features
