#include "runtime/cluster_queue.hpp"

#include <algorithm>

#include "actors/remote_pipeline.hpp"
#include "core/log.hpp"

namespace spindle::runtime {
namespace {

// The roster's view of the coordinator's member list.
std::map<int, serving::roster_member> roster_view(const std::map<int, member_info>& live) {
  std::map<int, serving::roster_member> out;
  for (const auto& [rank, m] : live)
    out[rank] = {m.ready && !m.bridge.empty(), m.leaving, !m.address.empty(), m.bridge,
                 std::uint64_t(std::max(0, m.joins))};
  return out;
}

// The pipelines each member said it serves with when ready (`fallback` if it said none).
std::map<int, int> pipelines_by_rank(const std::map<int, member_info>& live, int fallback) {
  std::map<int, int> out;
  for (const auto& [rank, m] : live) out[rank] = m.pipelines > 0 ? m.pipelines : fallback;
  return out;
}

}  // namespace

cluster_queue::cluster_queue(caf::actor_system& sys, caf::actor bridge, int per_rank,
                             std::shared_ptr<const serving::psgs_router> router,
                             std::function<double(const serving::gnn_request&)> psgs_of)
    : sys_(sys),
      bridge_(std::move(bridge)),
      per_rank_(per_rank),
      router_(std::move(router)),
      psgs_of_(std::move(psgs_of)) {}

cluster_queue::~cluster_queue() {
  for (const auto& [rank, of_rank] : stand_ins_)
    for (const auto& p : of_rank) caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

std::pair<std::vector<actors::pipeline_actor>, std::vector<std::int32_t>> cluster_queue::start(
    const std::map<int, member_info>& live) {
  std::pair<std::vector<actors::pipeline_actor>, std::vector<std::int32_t>> out;
  pipelines_of_ = pipelines_by_rank(live, per_rank_);
  for (const auto& c : roster_.update(roster_view(live))) {
    apply(c);  // no batcher yet: only adds (the rest needs a queue that fed the rank)
    for (const auto& p : stand_ins_[c.rank]) {
      out.first.push_back(p);
      out.second.push_back(c.rank);
    }
  }
  return out;
}

void cluster_queue::on_change(const std::map<int, member_info>& now) {
  pipelines_of_ = pipelines_by_rank(now, per_rank_);
  for (const auto& c : roster_.update(roster_view(now))) apply(c);
}

void cluster_queue::apply(const serving::roster_change& c) {
  using serving::roster_action;
  const int rank = c.rank;
  auto& of_rank = stand_ins_[rank];
  switch (c.action) {
    case roster_action::add: {
      // One stand-in per pipeline the rank said it runs (its --pipelines, which
      // may differ from rank 0's): each names a pipeline its bridge registered.
      const auto n = pipelines_of_.find(rank);
      const int count = n != pipelines_of_.end() ? n->second : per_rank_;
      caf::anon_send(bridge_, actors::peer_atom::value, rank, c.bridge);
      for (int i = 0; i < count; ++i) {
        of_rank.push_back(actors::spawn_remote_pipeline(sys_, bridge_, rank, router_, psgs_of_, i));
        if (batcher_)
          caf::anon_send(batcher_, actors::join_atom::value, of_rank.back(), std::int32_t(rank));
      }
      if (batcher_)
        log::info("rank {} serves: rank 0's queue feeds its {} pipeline{} too", rank, count,
                  count == 1 ? "" : "s");
      return;
    }
    case roster_action::up:
      log::info("rank {} serves again", rank);
      caf::anon_send(bridge_, actors::peer_atom::value, rank, c.bridge);  // before any batch
      for (const auto& p : of_rank)
        caf::anon_send(batcher_, actors::pipeline_down_atom::value, p, false);
      return;
    case roster_action::down:
      // The batcher is told first: its pipelines are marked down in its mailbox
      // before any batch failure that peer_down causes there.
      log::warn("rank {} stopped serving: its batches go to the other pipelines", rank);
      for (const auto& p : of_rank)
        caf::anon_send(batcher_, actors::pipeline_down_atom::value, p, true);
      caf::anon_send(bridge_, actors::peer_down_atom::value, rank);
      return;
    case roster_action::leave:
      log::info("rank {} leaves: rank 0's queue gives its pipelines no more batches", rank);
      for (const auto& p : of_rank) caf::anon_send(batcher_, actors::leave_atom::value, p);
      return;
    case roster_action::gone:
      // Its batches still in flight fail now and are retried on another pipeline;
      // the batcher takes its pipelines off first (before any failure peer_down causes).
      for (const auto& p : of_rank) caf::anon_send(batcher_, actors::leave_atom::value, p);
      caf::anon_send(bridge_, actors::peer_down_atom::value, rank);
      log::warn("rank {} is gone: rank 0's queue no longer feeds it", rank);
      stand_ins_.erase(rank);  // the batcher ends them once they hold no batch
      return;
  }
}

}  // namespace spindle::runtime
