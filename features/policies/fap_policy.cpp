// Quiver §5.2: FAP + topology-aware placement.
//
// The paper's steps (i)-(v) leave two choices open; ours, tested in
// tests/features/placement_test.cpp:
//  * Step (iv) "partition the most popular features, N_s per partition" would put
//    every hot row on server 0 if partitions were contiguous ranges. We assign
//    rows in FAP order to the server with the smallest summed FAP that has room
//    (greedy balance), as step (v) does for GPUs.
//  * Spare capacity (the cluster holds more than the table) replicates the
//    hottest R rows on every server, R <= (sum N_s - N) / (S - 1), capped at N_s.
//    With InfiniBand, N_s excludes disk, so cold rows go to remote memory before
//    any disk (Fig. 8d); with Ethernet, N_s includes disk, so each server can keep
//    hot rows locally and cold rows on its own disk (Fig. 8c).
//  * Re-plans (observed FAP, features/access_stats) are not in the paper. The greedy
//    balance alone reshuffles most partitioned rows on any small change of FAP
//    order, so a re-plan given the previous homes keeps a row on its old server
//    when that server's summed FAP is at most the lightest one's plus the
//    hottest row balanced so far. Greedy alone keeps servers within one hottest
//    row of each other; sticky homes keep them within two, and only rows whose
//    home must change move.
//  * Surviving a server's loss is not in the paper either. With [placement]
//    min_replicas = m and replica_fap_share = f, the hottest rows in FAP order
//    until f of the FAP mass are placed on m distinct servers (each extra copy
//    on the least loaded server with room that does not hold the row yet), so
//    that share survives any one loss. The copies come out of the spare room
//    the latency model would otherwise use for full replication; a cluster
//    without room for them fails, naming the settings.
//  * How much to replicate is the paper's objective, not a constant: replicas
//    that land in a tier slower than the network (host memory over PCIe when
//    InfiniBand is faster) make the last feature later. We build the plan for
//    R in {0, device tier, max/4, max/2, max} and keep the one with the lowest
//    expected aggregation latency under the topology's link model
//    (expected_latency_us: FAP-weighted bytes per link, slowest link wins).
#include <algorithm>
#include <limits>

#include "features/policies/policies.hpp"

namespace spindle::features {
namespace {

using detail::server_shards;

struct server_capacity {
  std::uint64_t device_tier = 0;  // rows the server's devices hold (after replication)
  std::uint64_t host = 0;
  std::uint64_t disk = 0;
  std::uint64_t fast = 0;  // N_s of step (iii)
};

// Step (ii): with peer links (NVLink, or shared memory between processes) a NUMA
// group pools its devices (G/C * N_g); without, every device replicates (N_g).
std::uint64_t device_tier_rows(const config::topology& topo, const server_shards& ss,
                               const std::vector<shard_info>& shards, int server) {
  if (ss.devices.empty()) return 0;
  const auto& srv = topo.servers[server];
  if (!topo.peer_links()) {
    std::uint64_t cap = std::numeric_limits<std::uint64_t>::max();
    for (int d : ss.devices) cap = std::min(cap, shards[d].capacity_rows);
    return cap;
  }
  std::vector<std::uint64_t> group(srv.numa_groups, 0);
  for (int d : ss.devices) group[srv.devices[shards[d].device].numa] += shards[d].capacity_rows;
  return *std::min_element(group.begin(), group.end());
}

server_capacity capacity_of(const config::topology& topo, const server_shards& ss,
                            const std::vector<shard_info>& shards, int server) {
  server_capacity c;
  c.device_tier = device_tier_rows(topo, ss, shards, server);
  c.host = ss.host >= 0 ? shards[ss.host].capacity_rows : 0;
  c.disk = ss.disk >= 0 ? shards[ss.disk].capacity_rows : 0;
  // Step (iii): N_s = G/C N_g + N_m (+ N_d without InfiniBand).
  c.fast = c.device_tier + c.host + (topo.fast_network() ? 0 : c.disk);
  return c;
}

// Greedy balance: each row goes to the candidate with the least summed FAP that
// still has room (lowest index on ties), or stays on `preferred` when that is
// within the hottest row taken so far of the least. Returns -1 when every candidate is full.
// Candidates are servers or a group's devices: a handful, so a scan is enough.
class balancer {
 public:
  explicit balancer(std::vector<std::uint64_t> room) : room_(std::move(room)), fap_(room_.size()) {}
  /// As take(), among candidates not in `excluded` (a row's extra copies).
  int take(double fap, int preferred = -1, const std::vector<int>& excluded = {}) {
    slack_ = std::max(slack_, fap);
    int best = -1;
    for (std::size_t i = 0; i < room_.size(); ++i)
      if (room_[i] > 0 && std::find(excluded.begin(), excluded.end(), int(i)) == excluded.end() &&
          (best < 0 || fap_[i] < fap_[std::size_t(best)]))
        best = int(i);
    if (best < 0) return -1;
    if (preferred >= 0 && std::size_t(preferred) < room_.size() && room_[preferred] > 0 &&
        std::find(excluded.begin(), excluded.end(), preferred) == excluded.end() &&
        fap_[preferred] <= fap_[std::size_t(best)] + slack_)
      best = preferred;
    fap_[std::size_t(best)] += fap;
    --room_[std::size_t(best)];
    return best;
  }

 private:
  std::vector<std::uint64_t> room_;
  std::vector<double> fap_;
  double slack_ = 0;
};

// Step (v): the server's hottest device_tier rows go to devices (partitioned
// within a NUMA group with peer links and replicated across groups; replicated
// on every device without), the next rows to host memory, the rest to disk.
void place_in_server(const config::topology& topo, const std::vector<shard_info>& shards,
                     const server_shards& ss, const server_capacity& cap, int server,
                     std::span<const std::uint64_t> rows, std::span<const double> fap,
                     detail::plan_assembler& out) {
  std::uint64_t ndev = std::min<std::uint64_t>(cap.device_tier, rows.size());
  const auto& srv = topo.servers[server];
  if (topo.peer_links()) {
    for (int g = 0; g < srv.numa_groups; ++g) {
      std::vector<int> members;
      std::vector<std::uint64_t> room;
      for (int d : ss.devices)
        if (srv.devices[shards[d].device].numa == g) {
          members.push_back(d);
          room.push_back(shards[d].capacity_rows);
        }
      balancer b(std::move(room));
      for (std::uint64_t i = 0; i < ndev; ++i) out.put(rows[i], members[b.take(fap[rows[i]])]);
    }
  } else {
    for (std::uint64_t i = 0; i < ndev; ++i)
      for (int d : ss.devices) out.put(rows[i], d);
  }
  std::uint64_t nhost = std::min<std::uint64_t>(cap.host, rows.size() - ndev);
  for (std::uint64_t i = ndev; i < ndev + nhost; ++i) out.put(rows[i], ss.host);
  for (std::uint64_t i = ndev + nhost; i < rows.size(); ++i) out.put(rows[i], ss.disk);
}

class fap_policy final : public placement_policy {
 public:
  std::string_view name() const override { return "fap"; }

  expected<placement_plan> place(const config::topology& topo,
                                 const placement_input& in) const override {
    const std::uint64_t n = in.fap.size();
    layout l{topo, in};
    if (l.total + l.disk_total < n)
      return detail::capacity_error(n, l.total + l.disk_total, in.row_bytes);
    auto order = detail::rank_descending(in.fap);  // step (i)
    const auto& guard = topo.placement;
    if (guard.min_replicas > l.holders)
      return make_error(errc::invalid_argument,
                        "placement.min_replicas = {}: the cluster has {} servers{}",
                        guard.min_replicas, l.holders,
                        l.holders < int(topo.servers.size()) ? " holding rows" : "");
    const std::uint64_t protect = rows_for_share(order, in.fap, guard);
    const std::uint64_t copies = protect * std::uint64_t(guard.min_replicas - 1);
    if (copies > 0 && l.total < n + copies)
      return make_error(errc::resource_exhausted,
                        "placement.min_replicas = {} for replica_fap_share = {}: {} rows need {} "
                        "more copies but the servers' memory has room for {} beyond the table "
                        "(lower the share or add memory)",
                        guard.min_replicas, guard.replica_fap_share, protect, copies,
                        l.total > n ? l.total - n : 0);
    // How much to replicate: the link model picks among candidates (see top).
    // A rank planned as absent (no memory) holds no copy; a TOML's server without
    // memory still counts, as it always did (plans, and their checksums, unchanged).
    const int S = l.holders;
    std::uint64_t most = 0;
    if (S > 1 && l.total > n)
      most = std::min({l.min_fast, (l.total - n) / std::uint64_t(S - 1), n});
    std::vector<std::uint64_t> candidates = {most, most / 2, most / 4, std::min(most, l.min_device),
                                             0};
    // Largest first: on a tie the plan with more replicas (more locality, more
    // copies to fall back on) wins.
    std::sort(candidates.rbegin(), candidates.rend());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    expected<placement_plan> best = make_error(errc::internal, "fap: no candidate plan");
    status last_error;
    double best_latency = 0;
    for (std::uint64_t r : candidates) {
      auto plan = build(topo, in, l, order, r, protect);
      // Full replication may leave no room for the protected rows' copies; a
      // candidate with fewer replicas still can.
      if (!plan && plan.error().code() == errc::resource_exhausted && protect > 0) {
        last_error = plan.error();
        continue;
      }
      if (!plan) return plan;
      double latency = expected_latency_us(topo, *plan, in.fap, in.batch_hint);
      if (!best || latency < best_latency) best = std::move(plan), best_latency = latency;
    }
    if (!best && !last_error.is_ok()) return last_error;
    return best;
  }

 private:
  struct layout {
    std::vector<shard_info> shards;
    std::vector<server_shards> index;
    std::vector<server_capacity> cap;
    std::uint64_t total = 0, disk_total = 0;
    int holders = 0;  // servers that hold copies: all but absent ranks
    std::uint64_t min_fast = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t min_device = std::numeric_limits<std::uint64_t>::max();
    layout(const config::topology& topo, const placement_input& in)
        : shards(enumerate_shards(topo, in.row_bytes)), index(detail::index_shards(topo, shards)) {
      for (int s = 0; s < int(topo.servers.size()); ++s) {
        cap.push_back(capacity_of(topo, index[s], shards, s));
        total += cap[s].fast;
        disk_total += topo.fast_network() ? cap[s].disk : 0;
        if (topo.servers[std::size_t(s)].absent) continue;
        ++holders;
        min_fast = std::min(min_fast, cap[s].fast);
        min_device = std::min(min_device, cap[s].device_tier);
      }
      if (holders == 0) min_fast = min_device = 0;
    }
  };

  // The hottest rows, in FAP order, until `share` of the FAP mass (0 without
  // the setting, or when full replication on every server already covers it).
  static std::uint64_t rows_for_share(const std::vector<std::uint64_t>& order,
                                      std::span<const double> fap,
                                      const config::placement_settings& guard) {
    if (guard.min_replicas <= 1 || guard.replica_fap_share <= 0) return 0;
    double total = 0;
    for (double f : fap) total += f;
    double sum = 0;
    std::uint64_t k = 0;
    while (k < order.size() && sum < guard.replica_fap_share * total) sum += fap[order[k++]];
    return k;
  }

  // min_replicas - 1 more copies of row v (first copy on `first`) on distinct servers.
  static status add_copies(const config::topology& topo, const placement_input& in, std::uint64_t v,
                           int first, balancer& fast,
                           std::vector<std::vector<std::uint64_t>>& fast_rows) {
    std::vector<int> holders = {first};
    while (int(holders.size()) < topo.placement.min_replicas) {
      const int s = fast.take(in.fap[v], -1, holders);
      if (s < 0)
        return make_error(errc::resource_exhausted,
                          "placement.min_replicas = {} for replica_fap_share = {}: no room for "
                          "another copy of node {} (the servers' memory is full; lower the "
                          "share or add memory)",
                          topo.placement.min_replicas, topo.placement.replica_fap_share, v);
      fast_rows[s].push_back(v);
      holders.push_back(s);
    }
    return status::ok();
  }

  // Step (iv), inter-server: replicate the hottest `replicate` rows on every
  // server, balance the rest over servers' fast tiers, then (InfiniBand) disks;
  // step (v) inside each server.
  static expected<placement_plan> build(const config::topology& topo, const placement_input& in,
                                        const layout& l, const std::vector<std::uint64_t>& order,
                                        std::uint64_t replicate, std::uint64_t protect) {
    const std::uint64_t n = in.fap.size();
    const int S = int(topo.servers.size());
    std::vector<std::vector<std::uint64_t>> fast_rows(S), disk_rows(S);
    std::vector<std::uint64_t> room(S), disk_room(S);
    for (int s = 0; s < S; ++s) {
      if (!topo.servers[std::size_t(s)].absent)
        fast_rows[s].assign(order.begin(), order.begin() + replicate);
      room[s] = l.cap[s].fast - std::min(l.cap[s].fast, replicate);
      disk_room[s] = topo.fast_network() ? l.cap[s].disk : 0;
    }
    balancer fast(room), slow(disk_room);
    for (std::uint64_t r = replicate; r < n; ++r) {
      std::uint64_t v = order[r];
      const int home = in.previous_server.empty() ? -1 : in.previous_server[v];
      if (int s = fast.take(in.fap[v], home); s >= 0) {
        fast_rows[s].push_back(v);
        if (r < protect) SPINDLE_TRY(add_copies(topo, in, v, s, fast, fast_rows));
      } else if (int d = slow.take(in.fap[v], home); d >= 0) {
        disk_rows[d].push_back(v);
      } else {
        return detail::capacity_error(n, l.total + l.disk_total, in.row_bytes);
      }
    }
    detail::plan_assembler out(n, l.shards);
    for (int s = 0; s < S; ++s) {
      place_in_server(topo, l.shards, l.index[s], l.cap[s], s, fast_rows[s], in.fap, out);
      for (std::uint64_t v : disk_rows[s]) out.put(v, l.index[s].disk);
    }
    return std::move(out).finish("fap", in.row_bytes);
  }
};

}  // namespace

std::unique_ptr<placement_policy> make_fap_policy() { return std::make_unique<fap_policy>(); }

}  // namespace spindle::features
