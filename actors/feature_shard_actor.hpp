// The feature_shard actor: the owner's side of a shard. Readers with UCX read
// its rows one-sidedly and never involve it; readers that cannot (no shared
// transport, or a client outside the cluster) ask it through the UCX bridge:
// (bridge_call_atom, (gather_atom, gather_request)) -> row_block. It
// counts what it served per node (observed FAP for these readers).
#pragma once

#include <caf/all.hpp>

#include "actors/bridge_messages.hpp"
#include "sched/placement/feature_lookup.hpp"

namespace spindle::actors {

using gather_atom = caf::atom_constant<caf::atom("gather")>;

/// The name shards register under at their process's bridge.
inline constexpr const char* feature_shard_target = "feature_shard";

/// `lookup` and `rows` (shard `shard`'s memory, dim floats per row) must outlive it.
///   (bridge_call_atom, (gather_atom, gather_request)) -> row_block
///   (stats_atom) -> std::uint64_t rows served
caf::actor spawn_feature_shard(caf::actor_system& sys, const sched::feature_lookup& lookup,
                               sched::shard_index shard, const std::byte* rows, std::uint32_t dim);

}  // namespace spindle::actors
