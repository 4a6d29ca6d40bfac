// A served graph that takes updates while it is read: the mapped dataset stays
// the base and each update batch becomes a new graph_delta, published whole
// (a batch is applied entirely or refused entirely, the refusal naming its
// first bad item). Readers take the current delta once per call without a
// lock held while they sample; one writer at a time applies batches in order.
// Edge direction follows the dataset: "in" (PyG's message flow) adds u to v's
// row for an edge u -> v, "out" adds v to u's row, an undirected graph both.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "graph/csr.hpp"
#include "graph/graph_delta.hpp"
#include "graph/graph_update.hpp"
#include "graph/typing.hpp"
#include "graph/version_waiters.hpp"

namespace spindle::graph {

class dataset;

struct update_result {
  std::uint64_t version = 0;
  /// The added nodes' ids; on a typed graph, ids local to their types, in the
  /// order of graph_update::nodes.
  std::vector<std::int64_t> new_ids;
};

/// What a follower of an update stream has done (runtime/graph_stream.hpp
/// fills it; stats and /metrics show it).
struct stream_follow_stats {
  std::string stream, group, last_id;
  std::uint64_t applied = 0, duplicates = 0, rejected = 0, errors = 0;
  bool connected = false;
  /// Staleness: from an entry's append (the time in its stream id, Redis's
  /// clock) to its batch being durable and visible here (this host's clock),
  /// counted in buckets of at most kStalenessBoundsMs[i] ms (the last: more).
  static constexpr std::array<double, 13> kStalenessBoundsMs = {
      1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
  std::array<std::uint64_t, kStalenessBoundsMs.size() + 1> staleness{};
  double staleness_sum_ms = 0;
  void note_staleness(double ms);
  /// The bound of the bucket holding quantile q of the staleness (ms; the last
  /// bound where it lies past it; 0 with nothing counted).
  double staleness_quantile_ms(double q) const;
};

/// How the base's rows relate to an input edge u -> v.
enum class row_direction { in, out, both };

/// Compactions while serving (graph/compactor.hpp), for stats and /metrics.
struct compaction_stats {
  std::uint64_t done = 0, failed = 0;
  std::uint64_t last_version = 0;   // the version the last one folded
  std::uint64_t bytes_freed = 0;    // log and replaced bases removed, all of them
  double last_seconds = 0, total_seconds = 0;
  bool running = false;
  std::string last_error;
};

struct live_graph_options {
  row_direction direction = row_direction::in;
  std::int64_t feature_dim = 0;
  /// A typed graph's node and edge types (empty: untyped). Batches then name
  /// their types (graph_update::add_typed, ...) and ids local to them; added
  /// rows of a type's width are padded with zeros to feature_dim.
  std::vector<node_type_info> node_types;
  std::vector<edge_type_info> edge_types;
  std::uint64_t base_version = 0;  // the version the base holds (a compacted dataset's)
  /// The last stream entries the base holds (a compacted dataset's): stream -> id.
  std::map<std::string, std::string> base_sources;
  /// The fanouts the base's PSGS was computed for (its metadata's): with them,
  /// each batch recomputes the PSGS of the nodes whose rows it changed and of
  /// the nodes it added (exactly, through the delta). Nodes whose rows did not
  /// change but lie upstream of a change (within fanouts - 1 hops) keep their
  /// base value until a compaction. Empty: no PSGS kept.
  std::vector<int> psgs_fanouts;
  /// Nodes the base holds as removed (a compacted dataset's removed_nodes()).
  std::span<const std::int64_t> removed_nodes;
  /// A compacted base to start from instead of the dataset's (what an earlier
  /// compaction while serving switched to); its metadata gives the version.
  std::shared_ptr<const dataset> base_dataset;
  /// Called with each accepted batch and its version before it is published
  /// (the write-ahead log's append); an error refuses the batch. Unset: not durable.
  std::function<status(const graph_update&, std::uint64_t version)> log;
  /// Makes every batch `log` wrote durable (fdatasync). Batches waiting for it
  /// share one call (group commit). Unset: `log` alone is as durable as wanted.
  std::function<status()> sync;
  /// After a failed sync: drops the records written since the last good one.
  std::function<void()> rollback;
};

class live_graph {
 public:
  /// Nodes one batch may add.
  static constexpr std::int64_t kMaxNodesPerBatch = std::int64_t{1} << 31;

  live_graph(csr_view base, live_graph_options options);

  /// The delta every call admitted now reads (never null; version 0: none).
  std::shared_ptr<const graph_delta> current() const;
  std::uint64_t version() const { return current()->version; }

  /// Checks the whole batch against the current graph, logs it, then publishes
  /// it as the next version once durable. An empty batch is refused.
  expected<update_result> apply(const graph_update& u) {
    SPINDLE_ASSIGN_OR_RETURN(auto s, stage(u));
    SPINDLE_TRY(commit(s.ticket));
    return std::move(s.result);
  }

  /// A batch checked, built over the newest staged one and written to the log:
  /// neither durable nor visible until commit(ticket) returns.
  struct staged {
    update_result result;
    std::uint64_t ticket = 0;
  };
  expected<staged> stage(const graph_update& u);
  /// Waits until every batch staged up to `ticket` is durable and published:
  /// the first waiter syncs the log for all staged so far while later ones
  /// wait (group commit). A failed sync refuses every batch it covered and
  /// every batch staged since (they were built on them).
  status commit(std::uint64_t ticket);

  /// Applies a batch read back from the log at its recorded version (replay):
  /// the same checks, no logging.
  status replay(const graph_update& u, std::uint64_t version);

  /// The id of the last batch applied from `stream` ("" when none).
  std::string last_source(const std::string& stream) const;
  /// Every stream's last applied entry (what a compaction records).
  std::map<std::string, std::string> sources() const;

  /// Runs ready(true) once the graph holds `version` (now, if it does), or
  /// ready(false) at `deadline` (a call's min_version; version_waiters.hpp).
  void when_version(std::uint64_t version, version_waiters::clock::time_point deadline,
                    version_waiters::ready_fn ready);
  /// Ends every wait now with ready(false) (the server answering them stops).
  void cancel_waits() { waiters_.cancel_all(); }

  /// Compaction while serving (graph/compactor.hpp), in three steps: take the
  /// graph to fold (every staged batch made durable first; later batches are
  /// recorded), write and open it as a new base, then switch to it: the batches
  /// recorded since are re-applied over it and published at the same version,
  /// so a reader sees the same graph before and after. One at a time.
  struct compaction_point {
    std::shared_ptr<const graph_delta> graph;         // the version to fold
    std::map<std::string, std::string> sources;       // its streams' last entries
  };
  expected<compaction_point> begin_compaction();
  status finish_compaction(std::shared_ptr<const dataset> base, const graph_delta& snapshot);
  void abandon_compaction();
  compaction_stats compactions() const;
  void set_compactions(const compaction_stats& s);

  /// The dataset's mapped base (a delta with its own base reads that instead).
  const csr_view& base() const { return base_; }
  /// The base `d` overlays.
  csr_view base_of(const graph_delta& d) const;
  const live_graph_options& options() const { return options_; }

 private:
  expected<std::shared_ptr<graph_delta>> build(const graph_delta& from, const graph_update& u,
                                               update_result& result) const;
  /// build() of a batch in the untyped form (global ids, rows of feature_dim);
  /// `types` carries a typed batch's lowered edge and node types (live_graph_typed.cpp).
  struct lowered_types;
  expected<std::shared_ptr<graph_delta>> build_flat(const graph_delta& from, const graph_update& u,
                                                    const lowered_types* types,
                                                    update_result& result) const;
  /// A typed batch in the untyped form: global ids, padded rows, its types.
  status lower_typed(const graph_delta& from, const graph_update& u, graph_update& flat,
                     lowered_types& types) const;
  /// Recomputes d's PSGS of `nodes` (psgs_fanouts set).
  void refresh_psgs(graph_delta& d, const std::vector<std::int64_t>& nodes) const;
  /// Node v's neighbour count at d (removed neighbours left out).
  std::int64_t degree_at(const graph_delta& d, std::int64_t v) const;

  csr_view base_;
  live_graph_options options_;
  void note_source(const graph_update& u);
  /// Runs one sync for everything staged (write_mu_ held by `lock`, released
  /// while syncing); returns the version published, or 0 after a failure.
  std::uint64_t lead_sync(std::unique_lock<std::mutex>& lock);
  /// One step towards durability: waits for the sync running, or runs one.
  void sync_or_wait(std::unique_lock<std::mutex>& lock);

  mutable std::mutex write_mu_;  // one batch built and written at a time
  std::condition_variable synced_;
  std::map<std::string, std::string> last_source_;  // stream -> entry id (durable ones)
  std::shared_ptr<const graph_delta> current_;  // read and swapped atomically
  // Group commit (under write_mu_): the newest batch built, and tickets.
  std::shared_ptr<const graph_delta> staged_;
  std::vector<std::pair<std::uint64_t, graph_update>> staged_sources_;  // ticket, source only
  std::uint64_t next_ticket_ = 1, durable_ticket_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> failed_;  // (after, through] each failed sync
  bool syncing_ = false;
  bool compacting_ = false;  // batches staged now are recorded for the switch
  std::vector<std::pair<std::uint64_t, graph_update>> recorded_;  // version, batch
  status sync_error_;
  version_waiters waiters_;
  mutable std::mutex stats_mu_;
  compaction_stats compactions_;
};

}  // namespace spindle::graph
