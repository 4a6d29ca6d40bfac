// The placement actor (one per cluster, on the coordinator): watches the
// observed feature accesses, and when they drift past a threshold from the FAP
// the current plan was made with (features::drift_monitor), or when asked,
// publishes the observed FAP and makes it the cluster's target plan: every
// node then builds its shard of the new epoch beside the old one and readers
// switch once all owners are ready (apps/commands/placement_sync), so service
// never stops. It only moves messages and calls the hooks and the monitor.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "actors/atoms.hpp"
#include "actors/serving_messages.hpp"
#include "config/cluster_ranks.hpp"
#include "core/status.hpp"

namespace spindle::actors {

struct placement_options {
  double drift_threshold = 0;         // re-plan when drift passes it; <= 0: only on request
  std::uint64_t min_requests = 2000;  // requests observed since the last plan before judging
  std::chrono::milliseconds check{250};
  int servers = 0;  // the ranks of the plan at start (the TOML's)
};

struct placement_hooks {
  /// The cumulative access counts per node and the requests they came from.
  std::function<std::pair<std::vector<std::uint32_t>, std::uint64_t>()> observe;
  /// Publishes the FAP of placement `epoch` over `ranks` for the nodes to read
  /// (keeping the previous epoch's, which nodes may still be reading); returns
  /// its descriptor.
  std::function<expected<std::string>(int epoch, const std::vector<double>& fap,
                                      config::plan_ranks ranks)>
      publish;
  /// The ranks the next plan should have (a rank joined, leaves or died); count
  /// 0 or empty: the current plan's. A difference re-plans at once, whatever the drift.
  std::function<config::plan_ranks()> ranks;
};

struct placement_stats {
  int epoch = 0;  // target plan's epoch (0 = the plan at start)
  double drift = 0;
  std::uint64_t window_requests = 0;
  std::uint64_t replans = 0;
  double threshold = 0;
  std::string last_error;
  int servers = 0;  // the target plan's ranks
  std::uint64_t absent = 0;  // of them, those with no rows (config::plan_ranks)
  config::plan_ranks ranks() const { return {servers, absent}; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, placement_stats& x) {
  return f(caf::meta::type_name("placement_stats"), x.epoch, x.drift, x.window_requests,
           x.replans, x.threshold, x.last_error, x.servers, x.absent);
}

/// Re-plans now from the accesses since the last plan (the new epoch), sets the
/// drift threshold (<= 0 turns it off), reports its counters; checks on its timer.
using placement_actor = caf::typed_actor<
    caf::reacts_to<tick_atom>, caf::replies_to<replan_atom>::with<int>,
    caf::reacts_to<threshold_atom, double>, caf::replies_to<caf::get_atom>::with<placement_stats>>;

/// `planned_fap` is the FAP epoch 0 was made with; `coordinator` takes plan_atom.
placement_actor spawn_placement(caf::actor_system& sys, caf::actor coordinator,
                           std::vector<double> planned_fap, placement_options options,
                           placement_hooks hooks);

}  // namespace spindle::actors

