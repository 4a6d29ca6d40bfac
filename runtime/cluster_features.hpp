// The feature reader of one pipeline thread on a cluster node: its own shard by
// pointer, every other rank's shard by one-sided UCX reads through the lookup
// table, with the control plane's word on members applied before each gather
// (a member seen down has its shards marked unreachable, even on shared memory
// where its mapped rows would stay readable; a member that rejoined with a new
// region is attached and read again). After a re-plan it switches to the new
// placement epoch between two gathers, once every owner of the new plan has
// published its shard, and says so (reading_epoch); an epoch it cannot attach
// leaves it on the one it reads, and says why (problem). One instance per pipeline thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "config/cluster_ranks.hpp"
#include "features/access_stats.hpp"
#include "features/feature_gather.hpp"
#include "features/placement.hpp"
#include "graph/dataset.hpp"
#include "serving/gnn_pipeline.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::runtime {
class rank_shard;
}

namespace spindle::runtime {

/// What the coordinator says about one live member.
struct member_info {
  std::string descriptor;  // its shard region for `epoch`, empty if none
  std::string bridge;      // its bridge address once it serves batches
  bool ready = false;
  int epoch = 0;               // placement epoch of `descriptor`
  std::string old_descriptor;  // its previous epoch's region until retired
  int old_epoch = -1;
  int reading = 0;  // the epoch its pipeline reads
  std::string problem;  // why it cannot build or read the target epoch ("" if nothing)
  int target = 0;   // rank 0 only: the placement epoch the cluster moves to
  std::string fap;  // rank 0 only: where the target plan's observed FAP is read
  std::string address;  // a rank that joined past the TOML's: its HOST:PORT (else "")
  bool leaving = false;  // asked to leave (`spindle cluster-leave`)
  int servers = 0;  // rank 0 only: the target plan's ranks (0..servers-1)
  int ranks = 0;    // rank 0 only: the ranks the next plan should have (joins, leaves)
  int from_epoch = 0;  // rank 0 only: the target before `target`, its FAP and ranks
  std::string from_fap;
  int from_servers = 0;
  int pipelines = 0;  // the pipelines it serves batches with, as its ready said (0: unsaid)
  int joins = 0;      // how often a process joined as this rank: a new one, a new count
  // Rank 0 only: the ranks among those planned with no rows (bit r: rank r, see
  // config::plan_ranks) in the target plan, the next one, and the one before.
  std::uint64_t absent = 0, wanted_absent = 0, from_absent = 0;
  config::plan_ranks target_ranks() const { return {servers, absent}; }
  config::plan_ranks wanted_ranks() const { return {ranks, wanted_absent}; }
  config::plan_ranks from_ranks() const { return {from_servers, from_absent}; }
  bool operator==(const member_info&) const = default;
};

/// The member's region laid out for `epoch`, or "" if it has none (yet / any more).
std::string descriptor_for(const member_info& m, int epoch);

/// The latest membership, written by one watcher thread, read by pipeline threads.
class member_view {
 public:
  void update(std::map<int, member_info> alive);
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::map<int, member_info> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<int, member_info> alive_;
  std::atomic<std::uint64_t> version_{0};
};

class cluster_features {
 public:
  /// Reads the newest epoch of `shard` (this rank's own shards, every tier, by
  /// pointer into its region for that epoch) whose other owners are all alive in
  /// `view` with a region for it.
  /// `ready`: the member list that was seen readable, attached from (the view
  /// may meanwhile hold an older poll's answer); null: the view's snapshot.
  static expected<std::unique_ptr<cluster_features>> create(
      const rank_shard& shard, const member_view& view,
      const std::map<int, member_info>* ready = nullptr);
  /// Whether some epoch of `shard` can be read with the members `alive`.
  static bool readable(const rank_shard& shard, const std::map<int, member_info>& alive);
  ~cluster_features();
  /// The pipeline's feature source (applies membership changes, then gathers).
  serving::feature_source source();
  std::uint64_t local_rows() const { return local_rows_.load(std::memory_order_relaxed); }
  /// Rows gathered per node and requests so far (the observed FAP; any thread).
  const features::access_counter& accesses() const { return *accesses_; }
  std::uint64_t remote_rows() const { return remote_rows_.load(std::memory_order_relaxed); }
  /// Rows read per placement epoch this reader used: by pointer from its own
  /// shard, and from other nodes' shards (mapped or one-sided), with the gathers.
  struct epoch_rows {
    int epoch = 0;
    std::uint64_t gathers = 0, local = 0, remote = 0;
  };
  std::vector<epoch_rows> rows_by_epoch();
  /// The placement epoch gathers read now (any thread).
  int reading_epoch() const { return reading_.load(std::memory_order_acquire); }
  /// Applies membership and epoch changes now, between two gathers (any thread;
  /// so an idle pipeline also leaves an old epoch).
  void refresh();
  /// Why the newest epoch every owner published cannot be read, naming it and the
  /// epoch still read ("" once it reads the newest); any thread.
  std::string problem() const;

 private:
  struct epoch_state;
  cluster_features(const rank_shard& shard, const member_view& view, transport::ucx::context ctx,
                   transport::ucx::worker w);
  expected<std::unique_ptr<epoch_state>> attach(int epoch, const std::map<int, member_info>& alive);
  void apply_membership();
  void switch_epoch(const std::map<int, member_info>& alive);
  void follow_members(const std::map<int, member_info>& alive);
  /// A reader of `shard` inside `server`'s region (which holds all its shards),
  /// kept in `st`; fails when the shard lies outside what the server published.
  expected<batched_reader*> shard_window(epoch_state& st, int server, int shard,
                                         batched_reader& region) const;

  const rank_shard& shard_;
  const member_view& view_;
  std::uint64_t seen_version_ = 0;
  transport::ucx::context ctx_;
  transport::ucx::worker worker_;
  std::uint32_t dim_ = 0;
  std::mutex gather_mu_;  // one gather or refresh at a time (uncontended on the hot path)
  std::unique_ptr<epoch_state> now_;
  std::atomic<int> reading_{0};
  std::atomic<std::uint64_t> local_rows_{0}, remote_rows_{0};  // read by stats from any thread
  std::vector<epoch_rows> by_epoch_;  // guarded by gather_mu_; back() is the current epoch
  std::unique_ptr<features::access_counter> accesses_;
  std::uint64_t gathers_ = 0;
  mutable std::mutex problem_mu_;
  std::string problem_;
};

}  // namespace spindle::runtime
