// A node's side of a placement re-plan, run at every member-watch poll: when
// rank 0 announces a target epoch newer than this node's shard, it reads the
// observed FAP one-sidedly from rank 0, builds its shard of the new plan beside
// the old one (rank_shard::build, rows new to this node from peer_rows) and
// publishes it; it reports the epoch its pipeline reads, with what keeps it from
// the target; and once every live member reads the new epoch it frees the old
// shard. A node restarted after a re-plan starts at epoch 0 and builds the
// target directly from its peers. The reader switches epochs itself (cluster_features).
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <map>

#include "runtime/cluster_features.hpp"
#include "runtime/rank_shard.hpp"

namespace spindle::runtime {

class placement_sync {
 public:
  placement_sync(caf::actor coordinator, rank_shard& shard);
  /// The pipeline reader whose epoch this node reports; nullptr: none (a node
  /// without a pipeline reports the epoch of its newest shard).
  void set_reader(cluster_features* reader) { reader_.store(reader); }
  /// One step of the protocol; called on the member-watch thread. An idle reader
  /// is refreshed here, so it leaves an old epoch without waiting for traffic.
  void poll(const std::map<int, member_info>& alive);

 private:
  void catch_up(const member_info& coordinator, const std::map<int, member_info>& alive);
  void report_reading();
  void retire(const std::map<int, member_info>& alive);
  void leave_when_done(const std::map<int, member_info>& alive);

  caf::actor coordinator_;
  rank_shard& shard_;
  std::atomic<cluster_features*> reader_{nullptr};
  int reported_ = -1;
  std::string reported_problem_;
  std::string problem_;  // the last build's failure (empty: none); watch thread only
  std::chrono::steady_clock::time_point retry_at_{};
};

}  // namespace spindle::runtime
