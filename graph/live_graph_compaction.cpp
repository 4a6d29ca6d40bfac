// Compaction while serving (live_graph's part): the snapshot to fold, the
// switch to the new base at the same version, and the compaction and stream
// figures stats show. The files and the thread are graph/compactor.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "graph/dataset.hpp"
#include "graph/live_graph.hpp"

namespace spindle::graph {

expected<live_graph::compaction_point> live_graph::begin_compaction() {
  std::unique_lock lock(write_mu_);
  if (compacting_) return make_error(errc::unavailable, "a compaction of this graph is running");
  // Everything staged is made durable first, so the snapshot holds every batch
  // staged before the recording starts.
  while (staged_) sync_or_wait(lock);
  compacting_ = true;
  recorded_.clear();
  return compaction_point{current(), last_source_};
}

void live_graph::abandon_compaction() {
  std::lock_guard lock(write_mu_);
  compacting_ = false;
  recorded_.clear();
}

// The batches recorded since the snapshot, re-applied in order over an empty
// delta on the new base: the same graph, version for version. Most are rebuilt
// without the writer lock (only durable ones: a failed sync never takes those
// back); the last few, and any still staged, under it.
status live_graph::finish_compaction(std::shared_ptr<const dataset> base,
                                     const graph_delta& snapshot) {
  auto fresh = std::make_shared<graph_delta>();
  fresh->version = snapshot.version;
  fresh->base_nodes = fresh->num_nodes = base->num_nodes();
  fresh->retired = snapshot.retired;
  snapshot.removed.for_each([&](std::int64_t v, std::uint64_t at) { fresh->retired.set(v, at); });
  fresh->base = std::move(base);
  if (fresh->num_nodes != snapshot.num_nodes) {
    abandon_compaction();
    return make_error(errc::internal, "compacted base has {} nodes, the graph at version {} {}",
                      fresh->num_nodes, snapshot.version, snapshot.num_nodes);
  }
  std::shared_ptr<const graph_delta> built = std::move(fresh);
  auto apply = [&](const graph_update& u, std::uint64_t version) -> status {
    update_result ignored;
    SPINDLE_ASSIGN_OR_RETURN(auto next, build(*built, u, ignored));
    if (next->version != version)
      return make_error(errc::internal, "compaction: batch {} rebuilt as version {}", version,
                        next->version);
    built = std::move(next);
    return status::ok();
  };
  std::size_t done = 0;
  std::unique_lock lock(write_mu_);
  for (;;) {
    const std::uint64_t durable = current()->version;
    std::vector<std::pair<std::uint64_t, graph_update>> batch;
    for (std::size_t i = done; i < recorded_.size() && recorded_[i].first <= durable; ++i)
      batch.push_back(recorded_[i]);
    if (batch.size() <= 8) break;
    lock.unlock();
    for (const auto& [version, u] : batch)
      if (auto st = apply(u, version); !st) {
        abandon_compaction();
        return st;
      }
    done += batch.size();
    lock.lock();
  }
  synced_.wait(lock, [&] { return !syncing_; });
  const std::uint64_t durable = current()->version;
  std::shared_ptr<const graph_delta> published;
  if (built->version == durable) published = built;
  for (; done < recorded_.size(); ++done) {
    const auto& [version, u] = recorded_[done];
    if (auto st = apply(u, version); !st) {
      compacting_ = false;
      recorded_.clear();
      return st;
    }
    if (version == durable) published = built;
  }
  if (!published || (staged_ && staged_->version != built->version)) {
    compacting_ = false;
    recorded_.clear();
    return make_error(errc::internal, "compaction: rebuilt versions {} do not reach version {}",
                      built->version, durable);
  }
  if (staged_) staged_ = built;
  std::atomic_store_explicit(&current_, std::move(published), std::memory_order_release);
  compacting_ = false;
  recorded_.clear();
  return status::ok();
}

void stream_follow_stats::note_staleness(double ms) {
  std::size_t i = 0;
  while (i < kStalenessBoundsMs.size() && ms > kStalenessBoundsMs[i]) ++i;
  ++staleness[i];
  staleness_sum_ms += ms;
}

double stream_follow_stats::staleness_quantile_ms(double q) const {
  std::uint64_t total = 0;
  for (auto n : staleness) total += n;
  if (total == 0) return 0;
  const double want = q * double(total);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < staleness.size(); ++i) {
    seen += staleness[i];
    if (double(seen) >= want)
      return kStalenessBoundsMs[std::min(i, kStalenessBoundsMs.size() - 1)];
  }
  return kStalenessBoundsMs.back();
}

compaction_stats live_graph::compactions() const {
  std::lock_guard lock(stats_mu_);
  return compactions_;
}

void live_graph::set_compactions(const compaction_stats& s) {
  std::lock_guard lock(stats_mu_);
  compactions_ = s;
}

}  // namespace spindle::graph
