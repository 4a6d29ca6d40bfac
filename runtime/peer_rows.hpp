// Rows a node building its shard of a placement epoch reads from the cluster:
// whatever live peers publish of an epoch's regions (one-sided UCX reads), and
// rows its peers' own copies of the dataset hold, lent on request through the
// coordinator (rank_shard::lend) for rows no live region holds any more.
#pragma once

#include <caf/all.hpp>
#include <map>
#include <span>
#include <vector>

#include "actors/node_actor.hpp"
#include "runtime/cluster_features.hpp"
#include "runtime/rank_shard.hpp"

namespace spindle::runtime {

/// Reads what it can of `ids` from the regions the live peers in `alive` publish
/// for `epoch`, laid out by `plan` (rows whose owners are this node, or publish no
/// region for `epoch`, are left); as rank_shard::row_fetch. Fails when no peer
/// publishes `epoch` or the gather over those that do fails.
status read_published(const rank_shard& shard, const features::placement_plan& plan, int epoch,
                      const std::map<int, member_info>& alive, std::span<const std::int64_t> ids,
                      float* out, std::vector<std::uint8_t>& have);

/// Asks each live peer in `alive` holding a dataset, in rank order and through
/// `coordinator`, to lend the rows of `ids` still missing that its own copy holds,
/// and reads them from the region it lends (freed after).
rank_shard::row_fetch lent_by_peers(caf::actor coordinator, rank_shard& shard,
                                    std::map<int, member_info> alive);

/// The node actor's hook answering those asks from `shard`'s own copy.
actors::lend_fn lend_hook(rank_shard& shard);

}  // namespace spindle::runtime
