// A cluster node's feature shards across placement epochs (its host shard, and
// its disk/device tiers' shards after it in the same region). Epoch 0
// is the FAP plan of the dataset's precomputed FAP; a re-plan (a new epoch,
// made from the FAP the coordinator observed) gets a new UCX region built
// beside the old one, so the old copy keeps serving until every reader has
// switched, and is freed then. Also publishes small blobs for one-sided reads
// (the observed FAP of a re-plan), reads other nodes' blobs, and lends rows of
// its own copy of the dataset to a peer that cannot read them elsewhere. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "config/cluster_ranks.hpp"
#include "config/topology.hpp"
#include "features/placement.hpp"
#include "graph/dataset.hpp"
#include "runtime/graph_updates.hpp"
#include "transport/ucx/progress_loop.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::runtime {

/// One epoch's plan and this node's rows of it (nullptr: it holds no host shard).
struct epoch_plan {
  int epoch = 0;
  std::shared_ptr<const features::placement_plan> plan;
  const std::byte* own_rows = nullptr;
};

/// The host-memory shard of `server` in `plan`; fails naming the server.
expected<int> host_shard_of(const features::placement_plan& plan, int server);

/// Where each of `server`'s shards sits in the UCX region the server publishes:
/// its host shard first (the epoch's own_rows), then its other tiers' shards
/// (disk, device) in shard order. Readers on other nodes address a shard at its
/// offset; every node computes the same layout from the plan.
struct region_slot {
  int shard = 0;
  std::uint64_t offset = 0, bytes = 0;
};
expected<std::vector<region_slot>> region_layout(const features::placement_plan& plan, int server,
                                                 std::uint32_t dim);

class rank_shard {
 public:
  /// Opens `dataset`, places it (epoch 0) and fills rank `rank`'s host shard.
  /// The rank's data is verified against its checksums unless `skip_verify`.
  /// With `updates` on (it needs a stream), the rank's graph takes every batch
  /// of that stream, in the stream's order, logged in a log of its own, and
  /// start returns once the stream's backlog is applied.
  static expected<std::unique_ptr<rank_shard>> start(const config::topology& topo,
                                                     const std::string& dataset, int rank,
                                                     bool skip_verify = false,
                                                     const graph_update_args& updates = {});
  ~rank_shard();

  const graph::dataset& dataset() const { return ds_; }
  /// The graph this rank serves while it takes updates (null: a static graph).
  graph::live_graph* live() { return ds_.live(); }
  /// Its stream follower's figures (null without updates).
  const graph_stream_follower* graph_stream() const { return graph_.stream.get(); }
  const config::topology& topology() const { return topo_; }
  int rank() const { return rank_; }
  /// The newest epoch built here, its plan and rows.
  epoch_plan latest() const;
  /// The plan of `epoch` if this node still keeps it.
  std::optional<epoch_plan> at(int epoch) const;
  /// The descriptor of this node's region for `epoch` ("" if it has none).
  std::string descriptor(int epoch) const;
  /// The checksum of the plan the rank started with (epoch 0), as hex: ranks
  /// laid out by different plans must not serve together.
  const std::string& start_plan_checksum() const { return start_plan_; }

  struct build_report {
    std::uint64_t rows = 0;       // rows of this node's new shard
    std::uint64_t kept = 0;       // copied from its previous shard
    std::uint64_t fetched = 0;    // read from their owners' regions (one-sided UCX reads)
    std::uint64_t from_disk = 0;  // read from this node's own copy (its partition or the whole)
    std::uint64_t lent = 0;       // lent by peers' own copies (rows no live region holds)
    std::uint64_t moved = 0;      // nodes whose owners changed in the cluster
    double seconds = 0;
  };
  /// Fills what it can of `ids` (row i at out + i * dim floats), setting have[i]
  /// for each row it filled and leaving rows already had alone; fails only when
  /// it could try no row at all. `next` is the plan being built.
  using row_fetch =
      std::function<status(const features::placement_plan& next, std::span<const std::int64_t> ids,
                           float* out, std::vector<std::uint8_t>& have)>;
  /// Where the rows a new shard needs from outside its previous host shard come
  /// from, in order: `owners` (the regions live peers publish: one-sided UCX
  /// reads), this node's own copy of the dataset, then `copies` (rows its peers'
  /// own copies hold, lent on request). A row none of them gives fails the build.
  struct row_sources {
    row_fetch owners;
    row_fetch copies;
  };
  /// Builds the shard of a new `epoch` from the FAP plan over `fap` that keeps
  /// rows on their `home` servers where it can (both published by rank 0, so
  /// every node, a restarted one too, builds the same plan). Rows this node held
  /// before are copied from its previous shard, the others come from `from`.
  /// Fails if `epoch` is not newer. `ranks`: the plan's ranks (count 0: the
  /// TOML's; more after joins, fewer after a leave; a rank past them or absent
  /// from them holds no rows of it).
  expected<build_report> build(int epoch, std::span<const double> fap,
                               std::span<const std::int32_t> home, const row_sources& from = {},
                               config::plan_ranks ranks = {});
  /// Frees every epoch before `epoch` (no reader uses them any more).
  void retire_before(int epoch);

  /// Publishes `bytes` for placement `epoch` in a UCX region of its own. The
  /// blobs of epoch - 1 (the target nodes may still be reading) and epoch - 2
  /// (the epoch the cluster serves while epoch - 1 is applied, whose inputs a
  /// joining rank reads, when `epoch` is a re-plan retried meanwhile) are kept,
  /// older ones are freed, and a second blob for the same epoch replaces the first.
  expected<std::string> publish_blob(int epoch, std::span<const std::byte> bytes);
  /// Whether `descriptor` names a blob this node still holds.
  bool owns_blob(const std::string& descriptor) const;
  /// Reads `bytes` bytes of the blob at `descriptor` one-sidedly into `out`.
  status read_blob(const std::string& descriptor, std::span<std::byte> out);

  /// Rows of this node's own copy of the dataset (its partition, or the whole),
  /// lent to rank `to` building a shard: those of `ids` the copy holds, back to
  /// back in a UCX region of their own (replacing what was lent to `to` before),
  /// with held[i] set for each. Empty `ids` frees what was lent to `to`. Fails
  /// naming an id outside the graph.
  struct lent_rows {
    std::string descriptor;  // empty when nothing is lent
    std::vector<std::uint8_t> held;
  };
  expected<lent_rows> lend(int to, std::span<const std::int64_t> ids);

 private:
  struct region;
  rank_shard(const config::topology& topo, graph::dataset ds, int rank);
  status follow_updates(graph_update_args a);
  expected<std::unique_ptr<region>> fill(const features::placement_plan& plan,
                                         const epoch_plan* previous, build_report& r,
                                         const row_sources& from = {});
  status describe(region& reg) const;
  // The rows a new shard needs from outside its previous host shard, into `at`.
  status place_wanted(const features::placement_plan& next, std::span<const std::int64_t> wanted,
                      std::span<std::byte* const> at, std::size_t row_bytes,
                      const row_sources& from, build_report& r) const;

  config::topology topo_;
  graph::dataset ds_;
  graph_update_service graph_;  // after ds_: stops first
  int rank_ = 0;
  std::optional<transport::ucx::context> ctx_;
  std::optional<transport::ucx::worker> worker_;
  std::vector<std::uint8_t> address_;  // the worker's, taken before the loop owns it
  std::unique_ptr<transport::ucx::progress_loop> loop_;
  mutable std::mutex mu_;
  std::string start_plan_;  // checksum of the epoch-0 plan, set once at start
  std::map<int, epoch_plan> plans_;
  std::map<int, std::unique_ptr<region>> regions_;
  std::map<int, std::unique_ptr<region>> blobs_;
  std::map<int, std::unique_ptr<region>> lent_;  // by the rank they are lent to
};

}  // namespace spindle::runtime
