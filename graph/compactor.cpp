#include "graph/compactor.hpp"

#include <filesystem>

#include "core/log.hpp"
#include "core/thread_pool.hpp"
#include "core/thread_priority.hpp"
#include "graph/compact.hpp"
#include "graph/compaction_files.hpp"
#include "graph/prepare.hpp"

namespace spindle::graph {
namespace fs = std::filesystem;

namespace {

// Writes the graph at `point` as a durable dataset directory `dir`, metrics
// recomputed as the served dataset had them.
status write_base(const dataset& ds, const live_graph::compaction_point& point,
                  const std::string& dir) {
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::remove_all(dir, ec);
  auto st = [&]() -> status {
    SPINDLE_TRY(compact_dataset(ds, *point.graph, point.sources, tmp));
    if (ds.has_metrics()) {
      const auto m = recorded_metrics_request(ds.metadata());
      // The worker and this thread share it, both at background priority.
      thread_pool pool(1, "compact");
      pool.submit(lower_to_background_priority);
      SPINDLE_TRY(recompute_metrics(tmp, m, pool));
    }
    SPINDLE_TRY(sync_directory(tmp));
    fs::rename(tmp, dir, ec);
    if (ec) return make_error(errc::io_error, "{}: rename to {}: {}", tmp, dir, ec.message());
    return sync_directory(fs::path(dir).parent_path().string());
  }();
  if (!st) fs::remove_all(tmp, ec);
  return st;
}

}  // namespace

std::uint64_t delta_changes(const graph_delta& d) {
  return d.rows.size() + d.features.size() + d.removed.size();
}

compactor::compactor(dataset& ds, std::shared_ptr<graph_log> log, compactor_options o)
    : ds_(ds), log_(std::move(log)), options_(std::move(o)) {
  if (options_.at_changes > 0) thread_ = std::thread([this] { watch(); });
}

compactor::~compactor() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void compactor::watch() {
  lower_to_background_priority();  // serving threads come first
  std::unique_lock lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, options_.poll, [&] { return stop_; })) {
    if (given_up_ || delta_changes(*ds_.live()->current()) < options_.at_changes) continue;
    lock.unlock();
    std::unique_lock run(run_mu_, std::try_to_lock);
    const status st = run ? compact_once() : status::ok();
    lock.lock();
    if (!st) {
      given_up_ = true;
      log::warn("graph compaction failed, and is not tried again until this server restarts: {}",
                st.message());
    }
  }
}

status compactor::compact_now() {
  std::unique_lock run(run_mu_, std::try_to_lock);
  if (!run) return make_error(errc::unavailable, "a compaction of this graph is running");
  auto st = compact_once();
  if (st) {
    std::lock_guard lock(stop_mu_);
    given_up_ = false;
  }
  return st;
}

status compactor::compact_once() {
  if (ds_.typed())  // readers hold the global ids a typed compaction renumbers
    return make_error(errc::unsupported,
                      "{}: a typed graph is compacted offline (`spindle compact`), not while "
                      "served",
                      ds_.dir());
  live_graph& live = *ds_.live();
  auto stats = live.compactions();
  stats.running = true;
  live.set_compactions(stats);
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t version = 0, freed = 0;
  bool folded = true;
  const status st = [&]() -> status {
    SPINDLE_ASSIGN_OR_RETURN(auto point, live.begin_compaction());
    version = point.graph->version;
    if (delta_changes(*point.graph) == 0) {  // nothing to fold
      live.abandon_compaction();
      folded = false;
      return status::ok();
    }
    const graph_files files = compaction_files(options_.log_path, version);
    if (auto s = write_base(ds_, point, files.base_dir); !s) {
      live.abandon_compaction();
      return s;
    }
    auto opened = dataset::open(files.base_dir);
    if (!opened) {
      live.abandon_compaction();
      return std::move(opened).error();
    }
    auto base = std::make_shared<const dataset>(std::move(*opened));
    SPINDLE_TRY(live.finish_compaction(base, *point.graph));
    // Readers are on the new base now; a restart reads it once the log switches.
    SPINDLE_TRY(log_->continue_in(files.log, base->graph(), version, [&] {
      return adopt_graph_files(options_.log_path, files);
    }));
    freed = remove_replaced_files(options_.log_path, files);
    return status::ok();
  }();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats = live.compactions();
  stats.running = false;
  if (st && !folded) {
    live.set_compactions(stats);
    return st;
  }
  if (st) {
    ++stats.done;
    stats.last_version = version;
    stats.last_seconds = seconds;
    stats.total_seconds += seconds;
    stats.bytes_freed += freed;
    log::info("graph compacted at version {} in {:.2f} s ({} bytes of log and old base freed)",
              version, seconds, freed);
  } else {
    ++stats.failed;
    stats.last_error = st.message();
  }
  live.set_compactions(stats);
  return st;
}

}  // namespace spindle::graph
