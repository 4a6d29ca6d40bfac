// The feature reader of one pipeline thread on a cluster node: its own shards by
// pointer, every other rank's shard by one-sided UCX reads through the lookup
// table, with the control plane's word on members applied before each gather
// (a member seen down has its shards marked unreachable, even on shared memory
// where its mapped rows would stay readable; a member that rejoined with a new
// region is attached and read again). One instance per pipeline thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "embedding/feature_gather.hpp"
#include "graph/dataset.hpp"
#include "sched/access_stats.hpp"
#include "sched/gnn_pipeline.hpp"
#include "sched/placement.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::apps {

/// What the coordinator says about one live member.
struct member_info {
  std::string descriptor;  // its shard region, empty if none
  std::string bridge;      // its bridge address once it serves batches
  bool ready = false;
  bool operator==(const member_info&) const = default;
};

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
  /// `own_host_rows` is this rank's published host shard (read by pointer);
  /// other shards of this rank are copied from the dataset. Every other rank
  /// owning a shard must be alive in `view` with a descriptor.
  static expected<std::unique_ptr<cluster_features>> create(const graph::dataset& ds,
                                                            const sched::placement_plan& plan,
                                                            int my_rank,
                                                            const std::byte* own_host_rows,
                                                            const member_view& view);
  /// The pipeline's feature source (applies membership changes, then gathers).
  sched::feature_source source();
  std::uint64_t local_rows() const { return local_rows_; }
  /// Rows gathered per node so far (observed FAP; read after the pipeline stopped).
  const sched::access_counter& accesses() const { return *accesses_; }
  /// Gathers served so far (one per request the pipeline answered or tried).
  std::uint64_t gathers() const { return gathers_; }
  std::uint64_t remote_rows() const { return remote_rows_; }

 private:
  cluster_features(const sched::placement_plan& plan, const member_view& view,
                   transport::ucx::context ctx, transport::ucx::worker w);
  void apply_membership();
  status attach_all(const graph::dataset& ds, int my_rank, const std::byte* own_host_rows);

  const sched::placement_plan& plan_;
  const member_view& view_;
  std::uint64_t seen_version_ = 0;
  transport::ucx::context ctx_;
  transport::ucx::worker worker_;
  std::uint32_t dim_ = 0;
  std::vector<std::vector<std::byte>> copies_;
  std::vector<std::unique_ptr<transport::ucx::remote_region>> regions_;
  std::map<int, std::vector<int>> shards_of_;  // rank -> its shards
  std::map<int, std::string> attached_;        // rank -> descriptor read now
  std::set<int> down_;
  std::unique_ptr<embedding::feature_gatherer> gatherer_;
  std::uint64_t local_rows_ = 0, remote_rows_ = 0;
  std::unique_ptr<sched::access_counter> accesses_;
  std::uint64_t gathers_ = 0;
  int my_rank_ = 0;
};

}  // namespace spindle::apps
