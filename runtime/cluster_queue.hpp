// Rank 0's shared queue of the cluster's GNN (its batcher) over the members'
// pipelines as membership changes: stand-ins for a rank's pipelines join the
// queue once it serves (a TOML rank at start, a rank that joined once it holds
// its rows and is ready) and leave it when it leaves or a joined rank dies; a
// TOML rank that dies is marked down until it is back. The decisions are
// serving::pipeline_roster's; this carries them out. Its listener runs on the
// member watch's thread; start() and the destructor on the owner's, with the
// listener removed first.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "actors/serving_messages.hpp"
#include "runtime/cluster_features.hpp"
#include "serving/pipeline_roster.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::runtime {

class cluster_queue {
 public:
  /// Stand-ins go through `bridge`, one per pipeline a member said it serves with
  /// when ready (`per_rank` for a member that said none), each routing its batches
  /// by `router` and `psgs_of`.
  cluster_queue(caf::actor_system& sys, caf::actor bridge, int per_rank,
                std::shared_ptr<const serving::psgs_router> router,
                std::function<double(const serving::gnn_request&)> psgs_of);
  ~cluster_queue();  // ends every stand-in it still holds
  cluster_queue(const cluster_queue&) = delete;
  cluster_queue& operator=(const cluster_queue&) = delete;

  /// The stand-ins for the members serving in `live`, and the rank of each, for
  /// the batcher spawned after this; later changes go to `attach`ed batcher.
  std::pair<std::vector<actors::pipeline_actor>, std::vector<std::int32_t>> start(
      const std::map<int, member_info>& live);
  void attach(actors::batcher_actor batcher) { batcher_ = std::move(batcher); }

  /// A member watch listener (every poll): brings the queue from the last list seen
  /// to `now`; a list it saw last changes nothing.
  void on_change(const std::map<int, member_info>& now);

 private:
  void apply(const serving::roster_change& c);
  caf::actor_system& sys_;
  caf::actor bridge_;
  int per_rank_;
  std::shared_ptr<const serving::psgs_router> router_;
  std::function<double(const serving::gnn_request&)> psgs_of_;
  actors::batcher_actor batcher_;
  serving::pipeline_roster roster_;
  std::map<int, int> pipelines_of_;  // by rank: the pipelines the last list says it runs
  std::map<int, std::vector<actors::pipeline_actor>> stand_ins_;  // by rank
};

}  // namespace spindle::runtime
